import { defineConfig } from 'vitest/config';

// Most suites wait on child processes, simulators and Redis more than they compute, so several
// files run at once. Suites that count requests per second against a limit run afterwards, one
// file at a time, so the machine's other work does not crowd their seconds.
const PACED = [
  'test/budget/**/*.test.ts',
  'test/simulator/rate-limit.test.ts',
  'test/api/setup.test.ts',
  'test/worker/fleet.test.ts',
];

// The longest end-to-end suites (kills, a fleet, minutes of simulated traffic) run with
// `npm run test:long`, which sets RUNSYNC_LONG_TESTS=1; `npm test` keeps within CI's time on two cores.
const LONG = [
  'test/chaos/chaos.test.ts',
  'test/sync/freshness.test.ts',
  'test/sync/rolling.test.ts',
  'test/sync/cursor-kill.test.ts',
  'test/sync/cursor.test.ts',
  'test/sync/resume.test.ts',
  'test/worker/s3-fleet.test.ts',
  'test/worker/flow.test.ts',
  'test/worker/fleet.test.ts',
  'test/cli/sync.test.ts',
  'test/budget/sim-sharing.test.ts',
];
const SKIPPED = process.env.RUNSYNC_LONG_TESTS === '1' ? [] : LONG;

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
          exclude: [...PACED, ...SKIPPED],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'paced', include: PACED, exclude: SKIPPED, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
