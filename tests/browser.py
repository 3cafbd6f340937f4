"""Headless Chromium for tests that look at the pages: Debian's chromium
and chromedriver, never a downloaded browser.  The flags keep it from
reaching out (it hangs on a closed network otherwise)."""

import shutil
import tempfile

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,1000")
# No way out: every name resolves to nothing and every proxied fetch fails.
OFFLINE = ("--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9")


def missing():
    """Why the browser cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            return f"needs {path} (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs the selenium Python package"
    return None


class Browser:
    """A headless Chromium with a fresh profile; a context manager."""

    def __init__(self, offline=False):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.profile = tempfile.mkdtemp(prefix="testbed-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS + (OFFLINE if offline else ()):
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(20)

    def __enter__(self):
        return self.driver

    def __exit__(self, *exc):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
