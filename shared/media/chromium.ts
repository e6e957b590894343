/**
 * Flags for headless Debian Chromium on a machine with no GPU and no internet (the render pool, and
 * the tests and benches that open our pages). Without the background-networking flags Chromium keeps
 * dialling Google's hosts; without the SwiftShader pair newer Chromium refuses WebGL on a CPU.
 */
export function chromiumArgs(profileDir: string, extra: readonly string[] = []): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--use-angle=swiftshader',
    '--enable-unsafe-swiftshader',
    ...extra,
    `--user-data-dir=${profileDir}`,
  ];
}
