"""The embedded demo corpus: numbers written out in English and German.

A deterministic translation task with real structure: German puts units before tens
("two and forty" for forty-two) and the source/target lengths differ. German compounds
are written with spaces between their parts (``drei hundert zwei und vierzig``) so that
BLEU measures more than whole-sentence matches.
"""
from __future__ import annotations

import random
from pathlib import Path

from nmtkit.data.folders import atomic_folder
from nmtkit.data.text import PathLike
from nmtkit.errors import NmtkitError

EN_SMALL = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen").split()
EN_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
DE_SMALL = ("null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn "
            "sechzehn siebzehn achtzehn neunzehn").split()
DE_TENS = "_ _ zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split()


def english(n: int) -> str:
    """0 <= n < 1,000,000 in English words, e.g. 342915 -> 'three hundred forty-two thousand nine hundred fifteen'."""
    if n == 0:
        return "zero"

    def below_thousand(k: int) -> list[str]:
        words = []
        if k >= 100:
            words += [EN_SMALL[k // 100], "hundred"]
            k %= 100
        if k >= 20:
            words.append(EN_TENS[k // 10] + (f"-{EN_SMALL[k % 10]}" if k % 10 else ""))
        elif k:
            words.append(EN_SMALL[k])
        return words

    words = (below_thousand(n // 1000) + ["thousand"] if n >= 1000 else []) + below_thousand(n % 1000)
    return " ".join(words)


def german(n: int) -> str:
    """0 <= n < 1,000,000 in German, compound parts separated: 42 -> 'zwei und vierzig'."""
    if n == 0:
        return "null"

    def below_thousand(k: int, final: bool) -> list[str]:
        words = []
        if k >= 100:
            words += ["ein" if k // 100 == 1 else DE_SMALL[k // 100], "hundert"]
            k %= 100
        if k >= 20:
            if k % 10:
                words += ["ein" if k % 10 == 1 else DE_SMALL[k % 10], "und"]
            words.append(DE_TENS[k // 10])
        elif k == 1:
            words.append("eins" if final else "ein")
        elif k:
            words.append(DE_SMALL[k])
        return words

    words = (below_thousand(n // 1000, False) + ["tausend"] if n >= 1000 else []) + below_thousand(n % 1000, True)
    return " ".join(words)


MAX_PAIRS = 500_000  # of the 999,999 numbers that can be drawn, how many are drawn in reasonable time


def write_demo_corpus(folder: PathLike, train: int = 20000, valid: int = 500, test: int = 500, seed: int = 1) -> Path:
    """Write ``{train,valid,test}.{en,de}`` with disjoint numbers, drawn log-uniformly below a million, as a new
    ``folder`` (replacing only a demo corpus folder written before, never a folder holding anything else)."""
    if train + valid + test > MAX_PAIRS:
        raise NmtkitError(f"--train, --valid and --test: at most {MAX_PAIRS:,} pairs together (the splits hold "
                          f"different numbers below a million), got {train + valid + test:,}", exit_code=2)
    rng = random.Random(seed)
    seen: set[int] = set()

    def draw() -> int:
        while True:
            n = int(10 ** rng.uniform(0, 6))
            if n < 1_000_000 and n not in seen:
                seen.add(n)
                return n

    with atomic_folder(folder, "demo corpus folder", replace=True, option="FOLDER", replace_option=None) as tmp:
        for split, count in (("test", test), ("valid", valid), ("train", train)):
            numbers = [draw() for _ in range(count)]
            for lang, render in (("en", english), ("de", german)):
                (tmp / f"{split}.{lang}").write_text("".join(render(n) + "\n" for n in numbers), encoding="utf-8")
    return Path(folder)
