// js-yaml comes with the dev tools (json-schema-to-typescript reads YAML with it); only load is used.
declare module 'js-yaml' {
  export function load(text: string): unknown;
}
