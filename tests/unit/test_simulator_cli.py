"""`crawl-ledger simulate`: arguments and operator errors (the server itself is tested in integration)."""

from __future__ import annotations

import argparse

import pytest

from ledger.cli import simulate
from ledger.cli.errors import CommandError


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    simulate.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["simulate", *argv])


def test_defaults_and_options() -> None:
    args = _parse()
    assert (args.port, args.stores, args.seed, args.fault_rate) == (8900, 5, 0, 0.0)
    assert args.handler is simulate.run_simulate
    args = _parse("--port", "0", "--stores", "12", "--seed", "7", "--fault-rate", "0.2")
    assert (args.port, args.stores, args.seed, args.fault_rate) == (0, 12, 7, 0.2)


@pytest.mark.parametrize(
    "argv", [("--stores", "0"), ("--fault-rate", "1.5"), ("--port", "70000")]
)
def test_bad_input_is_a_command_error(argv: tuple[str, ...]) -> None:
    with pytest.raises(CommandError):
        simulate.run_simulate(_parse(*argv))
