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
        test: { name: 'main', include: ['test/**/*.test.ts'], exclude: PACED, sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: 'paced', include: PACED, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
