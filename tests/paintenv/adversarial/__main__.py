"""`python -m tests.paintenv.adversarial` prints the matrix (construct x wrapper case counts);
`python -m tests.paintenv.adversarial ID...` prints those cases' sketches."""
import sys

from tests.paintenv.adversarial import CASES, CONSTRUCTS, LEGIT, WRAPPERS, by_id, matrix


def main(case_ids: list[str]) -> None:
    if case_ids:
        for cid in case_ids:
            c = by_id(cid)
            print(f"// {c.id}  form={c.form}  static={sorted(c.static_codes)}  "
                  f"runtime={sorted(c.runtime_codes)}")
            print(c.code)
    else:
        m = matrix()
        width = max(len(c) for c in CONSTRUCTS)
        print(" " * width, " ".join(w[:6].rjust(6) for w in WRAPPERS), "  total")
        for c in CONSTRUCTS:
            row = m[c]
            print(c.ljust(width), " ".join(str(row[w]).rjust(6) for w in WRAPPERS),
                  str(sum(row.values())).rjust(7))
        print(f"{len(CASES)} cases, {len(LEGIT)} legit sketches")


if __name__ == "__main__":
    main(sys.argv[1:])
