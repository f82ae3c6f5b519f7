// browse.js URL UNTIL OUT: open URL in Debian's Chromium, headless, in a
// 1400x900 window (playwright-core from .output/npm drives it); wait until
// the JavaScript expression UNTIL is true in the page (30 s at most), let
// two more frames be drawn, then write the screenshot to OUT.png and the
// DOM to OUT.dom. Exits 1, saying why, when the page threw, logged an
// error, failed to load something, or UNTIL never came true: a viewer that
// failed shows an empty page, which a screenshot alone would not tell.
'use strict';

const path = require('path');
const { chromium } = require(path.join(__dirname, '../../.output/npm/node_modules/playwright-core'));

async function main() {
	const [url, until, out] = process.argv.slice(2);
	const problems = [];
	const browser = await chromium.launch({
		executablePath: '/usr/bin/chromium',
		// as root, Chromium runs only without its sandbox
		args: ['--no-sandbox'],
	});
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
		page.on('pageerror', e => problems.push(`uncaught: ${e.message}`));
		page.on('console', m => {
			if (m.type() === 'error')
				problems.push(`console error: ${m.text()}`);
		});
		page.on('requestfailed', r => problems.push(`failed to load ${r.url()}: ${r.failure().errorText}`));
		await page.goto(url);
		try {
			await page.waitForFunction(until, null, { timeout: 30000 });
		} catch (e) {
			problems.push(`never true: ${until} (${e.message.split('\n')[0]})`);
		}
		// what UNTIL waited for may be drawn on the next frame (WebGL, d3)
		await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))));
		await page.screenshot({ path: `${out}.png` });
		require('fs').writeFileSync(`${out}.dom`, await page.content());
	} finally {
		await browser.close();
	}
	if (problems.length) {
		console.error(`${url}:\n  ${problems.join('\n  ')}`);
		process.exit(1);
	}
}

main().catch(e => {
	console.error(e.stack);
	process.exit(2);
});
