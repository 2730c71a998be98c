import { Command } from 'commander';
import { EXIT_USAGE, type CliContext } from '../cli-context.ts';

// Commands of the product contract whose implementation has not landed: their --help documents the
// interface, and running them says so and exits 2.

export function notBuilt(name: string, summary: string, configure: (c: Command) => void, ctx: CliContext, setExit: (code: number) => void): Command {
  const cmd = new Command(name).description(`${summary} (not built yet)`);
  configure(cmd);
  cmd.action(() => {
    ctx.err(`runsync ${name} is not built yet`);
    setExit(EXIT_USAGE);
  });
  return cmd;
}
