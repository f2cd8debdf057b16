"""The wired ledger every driver works with: command side, read side, event source.

Built by the composition root (`ledger.bootstrap`) from the operator's
settings; drivers receive it ready and never build one themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from domain.application import CrawlLedger
from eventstore.base import Backend
from eventstore.side_tables import SideTables
from projections import Projection, checkpoints, read_models
from projections.alert_subscriptions import AlertQueries
from projections.audit import StoredChain
from projections.db import Database
from projections.framework import create_all, lowest_position
from projections.queries import ReadModel
from projections.runner import ProjectionRunner
from projections.source import NotificationLogSource
from runtime.alert_channels import ChannelStore
from runtime.commands import Dispatcher
from runtime.defaults import DEFAULTS
from workers.archive.packs import OpenPackIndex
from workers.archive.raw_archive import RawArchive


@dataclass
class Ledger:
    """The command side (`app`), the read models (`db`, `read`), the side tables
    (`tables`: tokens, sessions, dataset manifests, claims, channels, heartbeats,
    positions, offsets), the raw archive (`archive()`) and the event log (`source`)."""

    app: CrawlLedger
    db: Database
    backend: Backend
    #: where embedded data lives: raw pages, Parquet datasets, logs
    data_dir: Path
    #: opens the raw archive's index (`workers.archive.packs.PackIndex`; the composition root's
    #: adapter, `eventstore.pack_index`)
    archive_index: OpenPackIndex
    #: the projector step takes a checkpoint of the read models every so many events
    #: (0: never; `projections.checkpoints`)
    checkpoint_every: int = 0
    source: NotificationLogSource = field(init=False)
    read: ReadModel = field(init=False)
    tables: SideTables = field(init=False)
    _runner: ProjectionRunner | None = field(default=None, init=False, repr=False)
    _identity: str | None = field(default=None, init=False, repr=False)
    _alerts: AlertQueries | None = field(default=None, init=False, repr=False)
    _commands: Dispatcher | None = field(default=None, init=False, repr=False)
    _tracking: tuple[str, ...] | None = field(default=None, init=False, repr=False)
    _checkpointed: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.source = NotificationLogSource(self.app.recorder, self.backend)
        self.read = ReadModel(self.db)
        self.tables = SideTables(self.db)

    @property
    def identity(self) -> str:
        """The event store's identity (stamped on published envelopes)."""
        if self._identity is None:
            self._identity = self.backend.identity(self.app.recorder)
        return self._identity

    @property
    def commands(self) -> Dispatcher:
        """The dispatcher every driver sends its operator commands to."""
        if self._commands is None:
            self._commands = Dispatcher(self.app, lambda: ChannelStore(self.tables.alert_channels))
        return self._commands

    @property
    def alerts(self) -> AlertQueries:
        """Queries of the alerts read model (its tables are created on first use)."""
        if self._alerts is None:
            self._alerts = AlertQueries(self.db)
        return self._alerts

    def archive(self, *, read_only: bool = False) -> RawArchive:
        """The data dir's raw archive, with the index adapter this ledger was built with."""
        return RawArchive(self.data_dir, self.archive_index, read_only=read_only)

    def create_tables(self) -> None:
        """Create the read models' tables (bootstrap does, under the schema lock, so
        processes started together on one store do not race to create them)."""
        create_all(self.db, self.projections())
        _ = self.alerts

    def projections(self, prefix: str = "") -> Sequence[Projection]:
        return read_models(prefix)

    def runner(self, batch_size: int = DEFAULTS.projection_batch) -> ProjectionRunner:
        return ProjectionRunner(self.source, self.db, self.projections(), batch_size)

    def catch_up(self) -> int:
        """The projector step: bring the read models up to date with everything recorded
        (and take a checkpoint of them when `checkpoint_every` events have passed)."""
        if self._runner is None:  # creating one creates the tables: do it once
            self._runner = self.runner()
        count = self._runner.catch_up()
        if count and self.checkpoint_every > 0:
            self._checkpoint_if_due()
        return count

    @property
    def chain(self) -> StoredChain:
        """The event log's audit chain (its stored links)."""
        return StoredChain(self.backend, self.app.recorder)

    def checkpoint(self) -> checkpoints.Checkpoint:
        """Catch the read models up and take a checkpoint of them."""
        if self._runner is None:
            self._runner = self.runner()
        self._runner.catch_up()
        point = checkpoints.write(self.db, self.projections(), self.chain.link_at)
        self._checkpointed = point.position
        return point

    def _checkpoint_if_due(self) -> None:
        if self._checkpointed is None:
            known = checkpoints.checkpoints(self.db)
            self._checkpointed = known[0].position if known else 0
        # the position the catch-up just reached (the runner knows it), else a read
        reached = self._runner.reached if self._runner is not None else None
        position = reached if reached is not None else self.projection_position()
        if position - self._checkpointed >= self.checkpoint_every:
            self._checkpointed = checkpoints.write(self.db, self.projections(),
                                                   self.chain.link_at).position

    def projection_position(self) -> int:
        """The last event position every read model has applied (a read: it neither
        creates tables nor waits for a catch-up in progress)."""
        if self._tracking is None:
            self._tracking = tuple(p.tracking_name for p in self.projections())
        return lowest_position(self.db, self._tracking)

    def close(self) -> None:
        self.db.close()
        self.app.close()
