/**
 * Records, uploads, webhooks and progress belong to an owner string: the account id for live keys
 * and access tokens, `sandbox:<account>` for sandbox keys. Account ids never hold a colon, so the
 * two spaces cannot collide, and workers can tell a sandbox task by its owner alone.
 */
export const SANDBOX_OWNER_PREFIX = "sandbox:";

export function sandboxOwner(accountId: string): string {
  return `${SANDBOX_OWNER_PREFIX}${accountId}`;
}

export function isSandboxOwner(owner: string): boolean {
  return owner.startsWith(SANDBOX_OWNER_PREFIX);
}
