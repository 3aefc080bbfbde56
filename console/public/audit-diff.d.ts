export function shortValue(value: unknown): string;
export function auditChanges(
  before: unknown,
  after: unknown,
): Array<{ field: string; kind: 'added' | 'removed' | 'changed'; before: string; after: string }>;
