/** Exit code for bad flags, environment or project files. */
export const EXIT_USAGE = 2;

export function fail(message: string, code: number): never {
  process.stderr.write(`agent-server: ${message}\n`);
  process.exit(code);
}
