import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { chromiumArgs } from '../shared/media/chromium.ts';
import type { TestApp } from './helpers.ts';

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * A test app listening on a free loopback port and a headless Debian Chromium with a fresh profile,
 * for tests that open our own pages; `close` stops both (the app's own `close` is the caller's).
 */
export async function serveInChromium(t: TestApp, tag: string): Promise<{ origin: string; browser: Browser; close: () => Promise<void> }> {
  const server = t.app.listen({ port: 0, hostname: '127.0.0.1' }).server;
  if (!server) throw new Error('the app did not start listening');
  const profileDir = mkdtempSync(join(tmpdir(), `${tag}-chromium-`));
  const browser = await puppeteer.launch({ executablePath: chromiumPath, args: chromiumArgs(profileDir) });
  return {
    origin: `http://127.0.0.1:${server.port}`,
    browser,
    close: async () => {
      await browser.close();
      await t.app.stop();
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}
