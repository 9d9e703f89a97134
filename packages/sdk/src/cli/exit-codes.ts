/** The exit codes of `voiceloc` (documented in the package README). */
export const EXIT = {
  ok: 0,
  /** Any other error: an API error without a code of its own (413, 415, 429, 5xx), a local I/O error. */
  error: 1,
  /** Wrong command line, missing configuration, or a server without an operation the command needs. */
  usage: 2,
  /** 401/403: no, unknown or revoked API key. */
  auth: 3,
  /** 422: the API refused the request; its items are printed. */
  validation: 4,
  /** 404: unknown id. */
  notFound: 5,
  /** The task ended in `failed` (its `task_error` is printed). */
  taskFailed: 6,
  /** The service could not be reached, or a transfer broke off. */
  network: 7,
  /** `--timeout` passed before the task finished (it goes on on the server). */
  timeout: 8,
  /** Ctrl-C / SIGINT / SIGTERM (the task goes on on the server). */
  interrupted: 130,
} as const;

export type ExitName = keyof typeof EXIT;
