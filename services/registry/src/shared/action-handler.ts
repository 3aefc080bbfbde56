import type { ActionRequest, ActionResponse, ActionType } from '@mcpx/contracts';

/** The role of a signer in its account (`registry.signers.role`). */
export type SignerRole = 'OWNER' | 'AGENT' | 'WRITER';

/** Who is acting: the account, and the signer with its role in it. */
export interface Caller {
  account: string;
  signer: string;
  role: SignerRole;
}

/** An action as it arrives in a verified envelope: a type and fields nobody has checked yet. */
export type Action = { type: string } & Record<string, unknown>;

/**
 * An action of type `T` as its handler receives it: decoded by the action map's request table of
 * `T` (`dispatchAction`), so each field has the type the table gives it and a field the table does
 * not name is not there. What a table cannot say (a referenced agent exists, a quota) the handler checks.
 */
export type ActionInput<T extends ActionType> = { readonly type: T } & Readonly<ActionRequest<T>>;

/**
 * The handler of action `T`, given what its room uses (`D`: each room names its own dependencies,
 * and the dispatcher hands every room the whole set): what it answers is the action map's response of `T`.
 */
export type ActionHandler<T extends ActionType, D> = (
  deps: D,
  caller: Caller,
  action: ActionInput<T>,
) => Promise<ActionResponse<T>>;
