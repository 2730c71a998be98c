// How much of what the key allowed an operation used, for status and /metrics: its burst at once,
// then what others left of its sustained rate (src/budget/views.ts).
export { allowance, keyShare } from '../budget/index.ts';
