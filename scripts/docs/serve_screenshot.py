"""The screenshot of the page at ``/`` in docs/guides/serving.md (docs/images/serve-page.png): the demo model and
the embedded kb served on 127.0.0.1, the page opened in the system's headless Chromium (Playwright), a sample
text linked and one mention selected.

    python scripts/docs/serve_screenshot.py [--out docs/images/serve-page.png]
"""

from __future__ import annotations

import argparse
import shutil
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "serve-page.png")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no system Chromium: apt-get install chromium")
    import uvicorn
    from playwright.sync_api import sync_playwright

    from mluke.serve import ServeConfig, create_app

    server = uvicorn.Server(uvicorn.Config(create_app(ServeConfig()), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1000, "height": 820})
            page.goto(url)
            page.wait_for_selector("#samples button")
            page.fill("#text", "Tokyo is the capital of Japan. Lyon is a city in France, and Gondor is not in the kb.")
            page.click("#link-btn")
            page.wait_for_selector("#linked .m")
            page.locator("#linked .m", has_text="Japan").click()
            page.wait_for_selector("#candidates")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out), full_page=True)
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
