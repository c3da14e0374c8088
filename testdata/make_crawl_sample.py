"""Write CRAWL_SAMPLE as a WARC file (default configs/crawl_sample.warc): python -m testdata.make_crawl_sample [PATH]"""

import sys
from pathlib import Path

from pipeline.crawl_sample import write_warc

if __name__ == "__main__":
    path = Path(
        sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "configs" / "crawl_sample.warc"
    )
    write_warc(path)
    print(path)
