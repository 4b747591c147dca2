// Operator commands of the portal's image: `node dist/cli.js reencrypt` re-seals every customer-tool secret and
// webhook signing secret that an older key sealed with the current CUSTOMER_TOOLS_ENCRYPTION_KEY (step 3 of a key
// rotation, see docs/deployment.md). It prints how many it changed; run it until it prints 0 twice, then drop the
// old key.
import { loadConfig, url } from '@fin/config';
import { customerToolsConfigShape, keyringFromConfig, reencryptToolSecrets } from '@fin/customer-tools';
import { createPool } from '@fin/db';
import { reencryptWebhookSecrets } from '@fin/webhooks';

const USAGE = 'Usage: cli reencrypt   (reads DATABASE_URL, CUSTOMER_TOOLS_ENCRYPTION_KEY, CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS)\n';

async function main(args: readonly string[]): Promise<number> {
  if (args[0] !== 'reencrypt' || args.length !== 1) {
    process.stderr.write(USAGE);
    return 64;
  }
  const config = loadConfig({ ...customerToolsConfigShape, DATABASE_URL: url(['postgres', 'postgresql']) });
  const pool = createPool({ connectionString: config.DATABASE_URL, applicationName: 'portal-cli', max: 1 });
  try {
    const keyring = keyringFromConfig(config);
    const changed = await reencryptToolSecrets(pool, keyring);
    process.stdout.write(`re-encrypted ${changed} tool${changed === 1 ? '' : 's'} with key ${config.CUSTOMER_TOOLS_ENCRYPTION_KEY.id}\n`);
    const secrets = await reencryptWebhookSecrets(pool, keyring);
    process.stdout.write(
      `re-encrypted ${secrets} webhook secret${secrets === 1 ? '' : 's'} with key ${config.CUSTOMER_TOOLS_ENCRYPTION_KEY.id}\n`,
    );
    return 0;
  } finally {
    await pool.end();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`reencrypt failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
