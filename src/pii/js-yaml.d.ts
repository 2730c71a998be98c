// js-yaml ships no types of its own; runsync reads policy files (and tests read compose files)
// with its load alone.
declare module 'js-yaml' {
  export function load(text: string): unknown;
}
