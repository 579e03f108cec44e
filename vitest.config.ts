import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    // under CI=true a missing bwrap, Chromium, Redis or agent CLI stops the run instead of skipping suites
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // real git and real child processes: two cores, so keep files from starving each other
    maxWorkers: 2,
  },
});
