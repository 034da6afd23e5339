"""A full disk, however it is reported (an OSError's errno or text, torch's and HDF5's RuntimeErrors), is one line
naming what was being written, and so is a file grown past the size allowed; any other error goes on as it was."""
import errno

import pytest

from nmtkit.errors import DiskFull, NmtkitError, is_disk_full, writing


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, ""), OSError(errno.EDQUOT, ""),
                                   RuntimeError("[enforce fail at inline_container.cc] file write failed, errno = 28"),
                                   OSError("Can't write data (file write failed: No space left on device)")])
def test_a_full_disk_while_writing_is_one_line_naming_the_file(error):
    assert is_disk_full(error)
    with pytest.raises(DiskFull, match="^no space left on device while writing out.pt"):
        with writing("out.pt"):
            raise error


@pytest.mark.parametrize("error", [OSError(errno.EFBIG, "File too large"),
                                   OSError("Can't write data (file write failed: File too large)")])
def test_a_file_past_the_size_allowed_is_one_line_naming_it(error):
    """(`ulimit -f`: train, preprocess and demo-corpus said "[Errno 27] File too large", naming nothing)"""
    with pytest.raises(NmtkitError, match=r"^file too large while writing out.pt: past the size the file system or "
                                          r"the process' limit allows \(ulimit -f\)$"):
        with writing("out.pt"):
            raise error


def test_other_errors_go_on_as_they_were():
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    with pytest.raises(RuntimeError, match="shape"):
        with writing("out.pt"):
            raise RuntimeError("shape '[2]' is invalid")
