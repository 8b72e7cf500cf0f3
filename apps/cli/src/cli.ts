import { commandHelp, groupHelp, parseCommand, VERSION, type Command } from './command';
import { DEPLOY_COMMAND } from './commands/deploy.command';
import { DEPLOYMENTS_COMMANDS } from './commands/deployments.command';
import { EXPORT_COMMANDS } from './commands/export.command';
import { KEYS_COMMANDS } from './commands/keys.command';
import { RUNS_COMMANDS } from './commands/runs.command';
import { ApiError, CommandFailed, EXIT, UsageError } from './errors';
import type { Io } from './output';

export const COMMANDS: Command[] = [DEPLOY_COMMAND, ...DEPLOYMENTS_COMMANDS, ...EXPORT_COMMANDS, ...RUNS_COMMANDS, ...KEYS_COMMANDS];

/** The longest command path the leading words name, or the words that name only a group of commands. */
function match(args: string[]): { command?: Command; group: string[]; rest: string[] } {
  const words: string[] = [];
  for (const a of args) {
    if (a.startsWith('-')) break;
    words.push(a);
  }
  let best: Command | undefined;
  for (const c of COMMANDS) if (c.path.every((p, i) => words[i] === p) && (!best || c.path.length > best.path.length)) best = c;
  if (best) return { command: best, group: best.path, rest: args.slice(best.path.length) };
  let group: string[] = [];
  for (let n = words.length; n > 0 && !group.length; n--) if (COMMANDS.some((c) => words.slice(0, n).every((w, i) => c.path[i] === w))) group = words.slice(0, n);
  return { group, rest: args.slice(group.length) };
}

/** Runs the command line; returns the exit code (0 ok, 1 failure, 2 usage). */
export async function runCli(args: string[], io: Io): Promise<number> {
  if (args[0] === '--version' || args[0] === '-V') {
    io.stdout.write(`${VERSION}\n`);
    return EXIT.ok;
  }
  const { command, group, rest } = match(args);
  if (!command) {
    if (args.length === 0) {
      io.stderr.write(groupHelp(COMMANDS, []));
      return EXIT.usage;
    }
    const unknown = rest.find((a) => !a.startsWith('-'));
    if (!unknown && (rest.includes('--help') || rest.includes('-h'))) {
      io.stdout.write(groupHelp(COMMANDS, group));
      return EXIT.ok;
    }
    const problem = unknown ? `unknown command: ${[...group, unknown].join(' ')}` : group.length ? `${group.join(' ')} needs a command` : `unknown option: ${rest[0]}`;
    io.stderr.write(`error: ${problem}\n\n${groupHelp(COMMANDS, group)}`);
    return EXIT.usage;
  }
  try {
    const ctx = parseCommand(command, rest, io, `tracehouse-cli/${VERSION}`);
    if (ctx === 'help') {
      io.stdout.write(commandHelp(command));
      return EXIT.ok;
    }
    return await command.run(ctx);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`error: ${err.message}\nRun \`tracehouse ${command.path.join(' ')} --help\` for usage.\n`);
      return EXIT.usage;
    }
    if (err instanceof ApiError || err instanceof CommandFailed) {
      io.stderr.write(`error: ${err.message}\n`);
      return EXIT.failure;
    }
    io.stderr.write(`error: ${(err as Error)?.stack ?? String(err)}\n`);
    return EXIT.failure;
  }
}
