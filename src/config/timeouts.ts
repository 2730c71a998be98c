// The ceilings of a request's phases, as the operator sets them (api/timeouts.ts waits less once
// an endpoint's answers are known).

export interface TimeoutSettings {
  connectMs: number;
  /** The longest wait for the response headers. */
  headersMs: number;
  /** The longest silence while the body streams in. */
  bodyMs: number;
  /** The longest a single attempt may take, from sending to the last byte. */
  requestMs: number;
}

export const DEFAULT_TIMEOUTS: Readonly<TimeoutSettings> = Object.freeze({
  connectMs: 10_000,
  headersMs: 30_000,
  bodyMs: 30_000,
  requestMs: 120_000,
});
