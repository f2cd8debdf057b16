"""`RecentDispatches`: the jobs a runner dispatched that its read models may not show
yet stay out of its slots until a catch-up started after their dispatch has ended."""

from __future__ import annotations

from runtime.scheduler import RecentDispatches


def test_a_dispatch_returned_while_a_catch_up_ran_stays_out_until_the_next() -> None:
    recent = RecentDispatches()
    recent.add(["a", "b"])
    mark = recent.mark()  # a catch-up starts
    recent.add(["c"])  # returns while it runs: that catch-up may not have read it
    recent.seen(mark)
    assert recent.jobs() == {"c"}
    recent.seen(recent.mark())  # the next catch-up
    assert recent.jobs() == frozenset()


def test_a_job_dispatched_again_counts_from_its_last_dispatch() -> None:
    recent = RecentDispatches()
    recent.add(["a"])
    mark = recent.mark()
    recent.add(["a"])  # released and dispatched again
    recent.seen(mark)
    assert recent.jobs() == {"a"}
