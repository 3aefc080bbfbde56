/**
 * A configuration value the service refuses to start with. `code` is stable (`invalid_config`),
 * `setting` names the environment variable at fault; the message never carries the value, which
 * may be key material.
 */
export class ConfigError extends Error {
  readonly code = 'invalid_config';

  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}
