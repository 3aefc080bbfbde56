/** See permissions.js. */
import type { ActionResponse } from './action-types.js';

export type Level = 'act' | 'always_ask';
export interface ListedTool {
  name: string;
  permission?: Level;
  permissionOverridden?: boolean;
  inheritedPermission?: Level;
  [field: string]: unknown;
}
/** SetToolPermission's answer (the action map's). */
export type PermissionReply = ActionResponse<'SetToolPermission'>;
export const PERMISSION_LEVELS: readonly Level[];
export const INHERITED: '';
export function levelLabel(level: Level): string;
export function choiceOf(tool: ListedTool): Level | '';
export function permissionOptions(inherited: Level | null): Array<{ value: Level | ''; label: string }>;
export function setPermissionFields(
  server: string,
  tool: string,
  choice: string,
): { server: string; tool: string; permission: Level | null };
export function withPermission<T extends ListedTool>(
  tool: T,
  reply: Pick<PermissionReply, 'permission' | 'overridden'>,
): T;
export class InheritedLevels {
  of(server: string, tool: ListedTool): Level | null;
  learn(reply: Pick<PermissionReply, 'server' | 'tool' | 'inherited'>): void;
}
export function toolKey(server: string, tool: string): string;
