// Bad configuration: the message is one line that names the setting, and never quotes a secret.

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    detail: string,
  ) {
    super(`${setting}: ${detail}`);
  }

  override get name(): string {
    return 'ConfigError';
  }
}
