// Replaced below by the real environment check; placeholder kept minimal on purpose.
export default async function setup(): Promise<void> {}
