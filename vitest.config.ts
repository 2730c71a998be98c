import { defineConfig } from 'vitest/config';

// Test tiers by file name:
// - `*.paced.test.ts` count requests per second against a limit: they run after the rest, one file
//   at a time, so the machine's other work does not crowd their seconds.
// - `*.long.test.ts` are the longest end-to-end suites (kills, fleets, minutes of simulated
//   traffic). `npm test` runs them with the rest; `npm run test:quick` leaves them out.
// Everything else runs several files at once: most suites wait on child processes, simulators and
// Redis more than they compute.
const PACED = 'test/**/*.paced.test.ts';
const LONG = 'test/**/*.long.test.ts';
const skipped = process.env.RUNSYNC_QUICK_TESTS === '1' ? [LONG] : [];

export default defineConfig({
  test: {
    // Generous: several suites share two cores, and a slow machine is not a failure.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: [PACED, ...skipped],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'paced',
          include: [PACED],
          exclude: skipped,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
