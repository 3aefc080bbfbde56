// Tool permission levels as the console shows and sets them (SetToolPermission). Pure: no DOM, no
// fetch, so it is tested in Node.
//
// ListMcpServers gives each tool its effective level (`permission`), `permissionOverridden` when
// that level is the owner's, and `inheritedPermission`. Every SetToolPermission reply carries the
// inherited level too; a tool from an older registry without it reads just "inherited".

/** The levels an owner can set, in the order the control offers them. */
export const PERMISSION_LEVELS = Object.freeze(['act', 'always_ask']);
/** The control's value for "no override": SetToolPermission's `permission: null`. */
export const INHERITED = '';

/** `act` → "act", `always_ask` → "always ask". */
export function levelLabel(level) {
  return level === 'always_ask' ? 'always ask' : String(level);
}

/** The control's value for a tool of ListMcpServers: its override, or {@link INHERITED}. */
export function choiceOf(tool) {
  return tool.permissionOverridden === true && PERMISSION_LEVELS.includes(tool.permission)
    ? tool.permission
    : INHERITED;
}

/** The control's options: "inherited (level)" (just "inherited" while the level is unknown), then each level. */
export function permissionOptions(inherited) {
  return [
    {
      value: INHERITED,
      label: PERMISSION_LEVELS.includes(inherited) ? `inherited (${levelLabel(inherited)})` : 'inherited',
    },
    ...PERMISSION_LEVELS.map((level) => ({ value: level, label: levelLabel(level) })),
  ];
}

/**
 * The SetToolPermission fields for a choice of the control: `tool` is the tool's remote name (the
 * name its server lists, not the re-exported one). Throws on a value the control never offers.
 */
export function setPermissionFields(server, tool, choice) {
  if (choice !== INHERITED && !PERMISSION_LEVELS.includes(choice))
    throw new Error(`not a permission level: ${String(choice)}`);
  return { server, tool, permission: choice === INHERITED ? null : choice };
}

/** The tool as ListMcpServers shows it after a SetToolPermission reply `{permission, overridden}`. */
export function withPermission(tool, reply) {
  const { permissionOverridden: _, ...rest } = tool;
  return {
    ...rest,
    permission: reply.permission,
    ...(reply.overridden === true ? { permissionOverridden: true } : {}),
  };
}

/** What the page knows of the level each tool inherits, by server and remote tool name. */
export class InheritedLevels {
  #levels = new Map();

  /** The level `tool` (of ListMcpServers) inherits, or null while this page has not seen it. */
  of(server, tool) {
    const key = toolKey(server, tool.name);
    if (PERMISSION_LEVELS.includes(tool.inheritedPermission)) {
      this.#levels.set(key, tool.inheritedPermission);
      return tool.inheritedPermission;
    }
    if (tool.permissionOverridden !== true && PERMISSION_LEVELS.includes(tool.permission))
      this.#levels.set(key, tool.permission);
    return this.#levels.get(key) ?? null;
  }

  /** Learns from a SetToolPermission reply `{server, tool, inherited}`. */
  learn(reply) {
    if (PERMISSION_LEVELS.includes(reply.inherited))
      this.#levels.set(toolKey(reply.server, reply.tool), reply.inherited);
  }
}

/** One key per tool of the account: a server name never holds a newline. */
export function toolKey(server, tool) {
  return `${server}\n${tool}`;
}
