"""The job steps every driver shares: scheduler tick, lease-fetch-record, projector step,
lease renewal and expiry, the clock and the defaults.

Drivers (the embedded runner, the Faust agents, the HTTP API, the bot) call these;
`runtime/` never imports a driver or the composition root (`ledger/`).
"""
