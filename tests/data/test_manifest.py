"""The corpus manifest's file records: the size and SHA-256 of every byte of a file."""
import hashlib

from nmtkit.data.manifest import file_record


def test_a_file_record_is_the_files_size_and_the_sha256_of_all_its_bytes(tmp_path):
    data = bytes(range(256)) * 5000  # (over 1 MiB: more than one block read)
    (tmp_path / "f").write_bytes(data)
    seen = []
    record = file_record(tmp_path / "f", seen.append)
    assert record["bytes"] == len(data) and record["sha256"] == hashlib.sha256(data).hexdigest()
    assert sum(seen) == len(data) and len(seen) == 2
