import type { Rule } from 'eslint';

export declare const LIBRARY_FLOORS: Record<string, string[]>;
export declare const TOP_FLOORS: Record<string, string[]>;
export declare const REGISTRY_ROOMS: Record<string, string[]>;
export declare const REGISTRY_TOP: string[];
export declare const floorsRule: Rule.RuleModule;
declare const plugin: { rules: { floors: Rule.RuleModule } };
export default plugin;
