"""Argument parsing that refuses bad values in one line.

`OneLineParser` prints every argparse error as one line on stderr and exits 2
(argparse's default prints the whole usage first). `number(low, high)` is the
`type=` of every numeric option: finite (no `nan`, no `inf`) and in range.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn

__all__ = ["OneLineParser", "number"]


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def number(low: float, high: float, *, integer: bool = False) -> Callable[[str], float]:
    """An argparse `type=`: a finite number in [low, high] (an integer if `integer`)."""
    kind = "an integer" if integer else "a number"

    def parse(text: str) -> float:
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text!r} must be {kind} from {low:g} to {high:g}")
        return value

    parse.__name__ = "integer" if integer else "number"
    return parse
