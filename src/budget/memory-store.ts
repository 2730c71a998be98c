import { initialBudgetState } from './belief.ts';
import type { BudgetState, BudgetStore } from './types.ts';

// The budget's state for one process. Updates run synchronously between awaits, so each one is
// atomic without a lock.

export class MemoryBudgetStore implements BudgetStore {
  private state: BudgetState;

  constructor(initial: Partial<BudgetState> = {}) {
    this.state = { ...initialBudgetState(), ...initial };
  }

  read(): Promise<BudgetState> {
    return Promise.resolve({ ...this.state });
  }

  update<R>(step: (state: BudgetState) => { state: BudgetState; result: R }): Promise<R> {
    const { state, result } = step({ ...this.state });
    this.state = { ...state };
    return Promise.resolve(result);
  }
}
