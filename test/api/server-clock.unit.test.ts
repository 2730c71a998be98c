import { describe, expect, it } from 'vitest';
import { ServerClock } from '../../src/api/server-clock.ts';

// The API's clock from the Date headers of its responses: whole seconds, stamped somewhere between
// a request's sending and its answer's arrival.

describe("the API's clock", () => {
  const at = (ms: number) => new Date(ms).toUTCString();

  it('narrows the offset from a few responses, and takes agreeing clocks as agreeing exactly', () => {
    let local = 1_000_000_000_500;
    const clock = new ServerClock(() => local);
    expect(clock.known).toBe(false);
    expect(clock.now()).toBe(local * 1000);
    // The API 20 minutes ahead; answers stamped 10 ms after sending, at varying sub-seconds.
    const skew = 20 * 60_000;
    for (const sub of [0, 130, 420, 777, 901, 990]) {
      local += 1000 + sub;
      clock.observe(at(local + 10 + skew), local, local + 20);
    }
    expect(Math.abs(clock.offsetMs() - skew)).toBeLessThan(150);
    const same = new ServerClock(() => local);
    same.observe(at(local + 5), local, local + 10);
    expect(same.offsetMs()).toBe(0);
  });

  it('starts again when a clock is stepped', () => {
    const clock = new ServerClock(() => 0);
    clock.observe(at(1_000_000_000_000), 1_000_000_000_000, 1_000_000_000_010);
    clock.observe(at(1_000_000_600_000), 1_000_000_000_100, 1_000_000_000_110);
    expect(clock.offsetMs()).toBeGreaterThan(590_000);
  });

  it("moves X-RateLimit-Reset and a dated Retry-After onto this machine's clock", () => {
    let local = 1_000_000_000_000;
    const clock = new ServerClock(() => local);
    clock.observe(at(local + 60_000), local, local + 1);
    local += 1;
    const h = clock.toLocal({
      'x-ratelimit-reset': String(Math.floor((local + 60_000) / 1000) + 5),
      'retry-after': '3',
    });
    expect(Number(h['x-ratelimit-reset']) * 1000 - local).toBeGreaterThan(4000);
    expect(Number(h['x-ratelimit-reset']) * 1000 - local).toBeLessThan(6100);
    expect(h['retry-after']).toBe('3');
    const dated = clock.toLocal({ 'retry-after': at(local + 60_000 + 7000) });
    expect(Number(dated['retry-after'])).toBeGreaterThanOrEqual(6);
    expect(Number(dated['retry-after'])).toBeLessThanOrEqual(8);
  });
});
