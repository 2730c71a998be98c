import type { Redis } from 'ioredis';
import { initialBudgetState } from './belief.ts';
import type { BudgetState, BudgetStore } from './types.ts';

// The budget's state shared by every process using the key, as one JSON value in Redis. An update
// reads the value under WATCH, applies the policy's pure step and writes it back in MULTI/EXEC;
// when another process wrote in between, EXEC fails and the step runs again on the new value.
// WATCH belongs to a connection, so the store takes a connection of its own and runs one update
// at a time. The times in the state are wall-clock milliseconds: machines sharing a key keep
// their clocks in step (NTP), as they must for Retry-After to mean the same thing to each.

export interface RedisBudgetStoreOptions {
  /** A connection used by nothing else (WATCH is per connection). */
  redis: Redis;
  /** The key holding the state, e.g. `runsync:budget`. */
  key: string;
  /** A state nobody touched for this long is forgotten (default an hour). */
  ttlMs?: number;
}

const MAX_CONFLICTS = 200;

export class RedisBudgetStore implements BudgetStore {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: RedisBudgetStoreOptions) {}

  private parse(raw: string | null): BudgetState {
    if (raw === null) return initialBudgetState();
    try {
      return { ...initialBudgetState(), ...(JSON.parse(raw) as Partial<BudgetState>) };
    } catch {
      return initialBudgetState();
    }
  }

  async read(): Promise<BudgetState> {
    return this.parse(await this.options.redis.get(this.options.key));
  }

  update<R>(step: (state: BudgetState) => { state: BudgetState; result: R }): Promise<R> {
    const run = () => this.attempt(step);
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async attempt<R>(step: (state: BudgetState) => { state: BudgetState; result: R }): Promise<R> {
    const { redis, key } = this.options;
    const ttl = this.options.ttlMs ?? 3_600_000;
    for (let i = 0; i < MAX_CONFLICTS; i++) {
      await redis.watch(key);
      let out: { state: BudgetState; result: R };
      try {
        out = step(this.parse(await redis.get(key)));
      } catch (e) {
        await redis.unwatch();
        throw e;
      }
      const done = await redis.multi().set(key, JSON.stringify(out.state), 'PX', ttl).exec();
      if (done !== null) return out.result;
    }
    throw new Error(`the shared rate budget at ${key} kept changing under ${MAX_CONFLICTS} attempts to update it`);
  }
}
