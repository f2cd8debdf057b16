"""`crawl-ledger jobs schedule|list|show|pause|resume|cancel|retry|force-run|reopen|requeue-dead`."""

from __future__ import annotations

import argparse
from typing import Any

from domain.crawl_job import RetryPolicy
from domain.retry import NON_RETRYABLE_LIMIT
from domain.values import JOB_KINDS
from ledger.cli.arguments import number
from ledger.cli.context import format_duration, open_ledger, parse_duration, utcnow
from ledger.cli.errors import CommandError
from ledger.cli.history import (
    add_show_parser,
    history_title,
    parse_as_of,
    print_history,
    stream_as_of,
)
from ledger.cli.ids import resolve_id, resolve_store
from ledger.cli.output import print_json, print_table, short, shown_id
from projections.queries import JOB_STATES
from runtime.as_of import job_as_of
from runtime.commands import JOB_CONTROLS, RequeueDead, ScheduleJob, cli_origin
from runtime.slots import place, planned_jobs


def register(sub: Any) -> None:
    jobs = sub.add_parser("jobs", help="schedule, inspect and control crawl jobs")
    actions = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    schedule = actions.add_parser(
        "schedule", help="schedule a crawl job (reopens it if it was cancelled, completed or dead)")
    schedule.add_argument("store_id", nargs="?", help="the store (omit for store_discovery/feed)")
    schedule.add_argument("--kind", required=True, choices=JOB_KINDS)
    schedule.add_argument("--url", required=True)
    schedule.add_argument("--every", help="interval, e.g. 4h (default: 4h; see --once)")
    schedule.add_argument("--once", action="store_true", help="a one-shot job")
    schedule.add_argument("--priority", type=number(-1000, 1000, integer=True), default=0)
    schedule.add_argument("--max-attempts", type=number(1, 100, integer=True), default=3)
    schedule.add_argument("--no-adaptive", action="store_true",
                          help="keep the interval fixed even when content does not change")
    schedule.add_argument("--spread", action="store_true",
                          help="first run in the least-loaded 15-minute slot within one "
                               "interval (default: now)")
    schedule.add_argument("--reason", help="why (recorded when a job is reopened)")
    schedule.add_argument("--json", action="store_true")
    schedule.set_defaults(handler=schedule_job)
    lst = actions.add_parser("list", help="list jobs")
    lst.add_argument("--state", choices=JOB_STATES)
    lst.add_argument("--store")
    lst.add_argument("--json", action="store_true")
    lst.add_argument("--wide", action="store_true", help="whole ids, times and URLs")
    lst.set_defaults(handler=list_jobs)
    add_show_parser(actions, "job_id", "a job's status and full event history", show_job)
    for name in JOB_CONTROLS:
        control = actions.add_parser(name, help=f"{name} a job")
        control.add_argument("job_id")
        control.add_argument("--reason", help="why (recorded with the change)")
        control.set_defaults(handler=control_job, control=name)
    requeue = actions.add_parser("requeue-dead", help="retry every dead job")
    requeue.add_argument("--reason", help="why (recorded with the change)")
    requeue.set_defaults(handler=requeue_dead)


def schedule_job(args: argparse.Namespace) -> int:
    if args.once and args.every:
        raise CommandError("--once and --every exclude each other")
    every = None if args.once else parse_duration(args.every or "4h")
    if args.spread and every is None:
        raise CommandError("--spread places recurring jobs: it needs --every, not --once")
    now = utcnow()
    with open_ledger(fresh=args.spread, create=True) as ledger:
        start = place(planned_jobs(ledger), every, now) if args.spread and every else None
        done = ledger.commands.send(ScheduleJob(
            kind=args.kind, url=args.url, origin=cli_origin(args.reason),
            store_id=resolve_store(ledger, args.store_id) if args.store_id else None, every=every,
            priority=args.priority, retry_policy=RetryPolicy(max_attempts=args.max_attempts),
            adaptive=not args.no_adaptive, start_at=start), now)
    what = "reopened" if done.reopened else "scheduled"
    if args.json:
        print_json({"id": str(done.job_id), "reopened": done.reopened})
    else:
        first = f", first run {start:%Y-%m-%d %H:%M} UTC" if args.spread and start else ""
        print(f"{what} {args.kind} job {done.job_id} ({format_duration(every)}{first})")
    return 0


def list_jobs(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        store = resolve_store(ledger, args.store) if args.store else None
        rows = ledger.read.jobs(state=args.state, store_id=store)
    if args.json:
        print_json([dict(r, id=r["job_id"]) for r in rows])
        return 0
    wide = args.wide
    columns = ["id", "kind", "state", "try", "next run (UTC)", "last", "url"]
    print_table("jobs", columns + (["every", "prio"] if wide else []),
                ([shown_id(r["job_id"], wide), r["kind"], r["state"],
                  f"{r['attempt']}/{r['max_attempts']}",
                  (r["next_run_at"] or "")[:19 if wide else 16].replace("T", " "),
                  r["last_error"] or r["last_status"] or "", r["url"]]
                 + ([format_duration(r["interval_s"]), r["priority"] + (r["boost"] or 0)]
                    if wide else []) for r in rows), wide, flexible=("last", "url"))
    return 0


def show_job(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        job_id = resolve_id(ledger, "job", args.job_id)
        job, history = stream_as_of(ledger, ledger.app.get_job(job_id), args.as_of,
                                    None if args.all else args.last)
        status = (job_as_of(ledger, job, parse_as_of(args.as_of))["state"] if args.as_of
                  else ledger.read.job(str(job.id)))
    if args.json:
        print_json({"id": str(job.id), "status": status,
                    "nonretryable_failures": job.nonretryable_failures,
                    "events": [e.to_dict() for e in history]})
        return 0
    print(f"job {job.id}  {job.kind}  {job.url}" + (f"  (as of {args.as_of})" if args.as_of else ""))
    print(f"  state {job.state}, attempt {job.attempt}/{job.policy.max_attempts}, "
          f"every {format_duration(job.interval)}, next run {job.next_run_at:%Y-%m-%d %H:%M:%S}Z, "
          f"priority {job.priority}, store {short(job.store_id)}, parent {short(job.parent_job)}")
    if job.last_error:
        print(f"  last error: {job.last_error}")
    if job.nonretryable_failures:
        print(f"  non-retryable failures in a row: {job.nonretryable_failures} of "
              f"{NON_RETRYABLE_LIMIT} (dead-lettered at {NON_RETRYABLE_LIMIT})")
    print_history(history_title(job, history), history)
    return 0


def control_job(args: argparse.Namespace) -> int:
    with open_ledger(fresh=False) as ledger:
        job_id = resolve_id(ledger, "job", args.job_id)
        ledger.commands.send(JOB_CONTROLS[args.control](job_id, cli_origin(args.reason)),
                             utcnow())
        state = ledger.app.get_job(job_id).state
    print(f"job {args.job_id}: {args.control} recorded, now {state}")
    return 0


def requeue_dead(args: argparse.Namespace) -> int:
    with open_ledger() as ledger:
        dead = [r["job_id"] for r in ledger.read.jobs(state="dead")]
        requeued = ledger.commands.send(RequeueDead(dead, cli_origin(args.reason)), utcnow())
    print(f"requeued {len(requeued)} dead job(s)")
    return 0
