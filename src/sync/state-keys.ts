// Where the sync keeps its walks and watermark in _sync_state. Apart from the walks themselves so
// that the commands that only read them (status, report) load nothing of the API client.

export const LIVE_KEY = 'runs.live';
export const RECONCILE_KEY = 'runs.reconcile';
export const WATERMARK_KEY = 'runs.watermark';
export const ROLLING_KEY = 'runs.rolling';
/** What the looks at open runs have found: how often each kind changes (open-hazard.ts). */
export const OPEN_HAZARD_KEY = 'runs.open_hazard';
/** How many open runs a list request has answered for lately (open-runs.ts). */
export const OPEN_YIELD_KEY = 'runs.open_yield';
