"""`crawl-ledger simulate`: arguments and operator errors (the server itself is tested in integration)."""

from __future__ import annotations

import argparse

import pytest

from ledger.cli import main, simulate


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
    "argv", [("--stores", "0"), ("--fault-rate", "1.5"), ("--port", "70000"),
             ("--fault-rate", "nan"), ("--seed", "inf")]
)
def test_bad_input_is_refused_in_one_line_with_exit_2(
        argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and argv[0] in err, err
