import {
  DEFAULT_MEMORY_LIMIT_SETTING,
  type MemoryBudget,
  MIN_MEMORY_BYTES,
  memoryBudget,
  parseMemorySize,
} from '../util/memory-budget.ts';
import { ConfigError } from './error.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** RUNSYNC_MEMORY_LIMIT, shared out (src/util/memory-budget.ts); a bad value names the setting. */
export function memoryBudgetOf(env: Env): MemoryBudget {
  const raw = env.RUNSYNC_MEMORY_LIMIT?.trim() || DEFAULT_MEMORY_LIMIT_SETTING;
  const bytes = parseMemorySize(raw);
  if (bytes === null)
    throw new ConfigError('RUNSYNC_MEMORY_LIMIT', `must be a size such as 400MB, 1GB or 512MiB; got "${raw}"`);
  if (bytes < MIN_MEMORY_BYTES) throw new ConfigError('RUNSYNC_MEMORY_LIMIT', `must be at least 192MB; got "${raw}"`);
  return memoryBudget(bytes);
}
