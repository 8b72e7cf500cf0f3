/** Exit codes, as docs/cli.md documents them. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** The command line itself is wrong (unknown option, missing argument, a value the API's schema refuses): exit 2. */
export class UsageError extends Error {}

/** The service answered with an error status: exit 1, with the service's message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

/** Something the command waited for failed or did not happen in time (a build, an export): exit 1. */
export class CommandFailed extends Error {}
