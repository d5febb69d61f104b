"""``python -m sparsegp data``: list, fetch, verify and locate the benchmark data."""
import sys


def add_data_parser(sub):
    """Register the ``data`` subcommand and its four actions on ``sub`` (argparse)."""
    data = sub.add_parser("data", help="list, fetch and verify the benchmark data sets")
    data.add_argument("--data-home", default=None,
                      help="data folder (default: $SPARSEGP_DATA, else pooch's cache folder)")
    actions = data.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every registered data set: size, URL, SHA-256, cached?")
    fetch = actions.add_parser("fetch", help="download and convert NAME (or all)")
    fetch.add_argument("name", help="a registered data set, or 'all'")
    fetch.add_argument("--base-url", default=None,
                       help="fetch every file from BASE_URL/<file> (a mirror); default "
                            "$SPARSEGP_DATA_URL, else the registered URLs")
    actions.add_parser("verify", help="re-hash every downloaded file against its SHA-256")
    actions.add_parser("path", help="print the data folder")


def run_data(args, out=None):
    """Carry out a parsed ``data`` command; returns the exit status (0 when all went well)."""
    from .datasets import (REGISTRY, DownloadError, cache_status, fetch, get_data_home,
                           verify_cache)

    out = out or sys.stdout
    home = get_data_home(args.data_home)
    if args.action == "path":
        print(home, file=out)
        return 0
    if args.action == "list":
        print(f"data folder: {home}", file=out)
        print("name\tfile\tsize\tcached\turl\tsha256", file=out)
        for row in cache_status(home):
            state = "converted" if row["converted"] else None
            if not row["files"]:
                print(f"{row['name']}\t-\t-\t{state or 'no'}\tno download route yet: "
                      f"{row['source']}\t-", file=out)
            for f in row["files"]:
                size = f"{f['size']:,}" if f["size"] else "?"
                cached = state or ("downloaded" if f["cached"] else "no")
                print(f"{row['name']}\t{f['fname']}\t{size}\t{cached}\t{f['url'] or '-'}\t"
                      f"{f['sha256'] or 'recorded at first download'}", file=out)
        return 0
    if args.action == "verify":
        results = verify_cache(home)
        for fname, status in results:
            print(f"{status}\t{fname}", file=out)
        bad = sum(status != "ok" for _, status in results)
        print(f"{len(results)} file(s) checked in {home}, {bad} mismatch(es)", file=out)
        return 1 if bad else 0
    names = ([n for n in sorted(REGISTRY) if REGISTRY[n].fetchable] if args.name == "all"
             else [args.name])
    failed = 0
    for name in names:
        try:
            path = fetch(name, data_home=home, base_url=args.base_url)
        except (ValueError, DownloadError) as exc:
            failed += 1
            print(f"error: {name}: {exc}", file=sys.stderr)
            continue
        print(f"{name}\t{path}", file=out)
    return 1 if failed else 0
