"""Runs the 13 standard SSB queries in DuckDB over the Parquet or CSV export of a data set and
prints their results as JSON: {query: [[group key, ..., aggregate], ...]}, group keys as text.

Usage: python3 duckdb_ssb.py DIR [--format parquet|csv]
DIR holds <table>.parquet (`tessera ssb generate --parquet`: DATA/parquet) or <table>.csv
(`--csv`: DATA/csv); without --format the files DIR holds decide, Parquet first. The SQL is the
specification's (O'Neil et al., rev. 3), with the group-by columns listed first in the select
list and no ORDER BY (the caller sorts)."""
import argparse
import json
import os
import sys

import duckdb

QUERIES = {
    "q1.1": """select sum(lo_extendedprice*lo_discount) from lineorder, date
        where lo_orderdate = d_datekey and d_year = 1993
        and lo_discount between 1 and 3 and lo_quantity < 25""",
    "q1.2": """select sum(lo_extendedprice*lo_discount) from lineorder, date
        where lo_orderdate = d_datekey and d_yearmonthnum = 199401
        and lo_discount between 4 and 6 and lo_quantity between 26 and 35""",
    "q1.3": """select sum(lo_extendedprice*lo_discount) from lineorder, date
        where lo_orderdate = d_datekey and d_weeknuminyear = 6 and d_year = 1994
        and lo_discount between 5 and 7 and lo_quantity between 26 and 35""",
    "q2.1": """select d_year, p_brand1, sum(lo_revenue) from lineorder, date, part, supplier
        where lo_orderdate = d_datekey and lo_partkey = p_partkey and lo_suppkey = s_suppkey
        and p_category = 'MFGR#12' and s_region = 'AMERICA' group by d_year, p_brand1""",
    "q2.2": """select d_year, p_brand1, sum(lo_revenue) from lineorder, date, part, supplier
        where lo_orderdate = d_datekey and lo_partkey = p_partkey and lo_suppkey = s_suppkey
        and p_brand1 between 'MFGR#2221' and 'MFGR#2228' and s_region = 'ASIA'
        group by d_year, p_brand1""",
    "q2.3": """select d_year, p_brand1, sum(lo_revenue) from lineorder, date, part, supplier
        where lo_orderdate = d_datekey and lo_partkey = p_partkey and lo_suppkey = s_suppkey
        and p_brand1 = 'MFGR#2239' and s_region = 'EUROPE' group by d_year, p_brand1""",
    "q3.1": """select c_nation, s_nation, d_year, sum(lo_revenue) from customer, lineorder, supplier, date
        where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey
        and c_region = 'ASIA' and s_region = 'ASIA' and d_year >= 1992 and d_year <= 1997
        group by c_nation, s_nation, d_year""",
    "q3.2": """select c_city, s_city, d_year, sum(lo_revenue) from customer, lineorder, supplier, date
        where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey
        and c_nation = 'UNITED STATES' and s_nation = 'UNITED STATES'
        and d_year >= 1992 and d_year <= 1997 group by c_city, s_city, d_year""",
    "q3.3": """select c_city, s_city, d_year, sum(lo_revenue) from customer, lineorder, supplier, date
        where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey
        and (c_city='UNITED KI1' or c_city='UNITED KI5') and (s_city='UNITED KI1' or s_city='UNITED KI5')
        and d_year >= 1992 and d_year <= 1997 group by c_city, s_city, d_year""",
    "q3.4": """select c_city, s_city, d_year, sum(lo_revenue) from customer, lineorder, supplier, date
        where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_orderdate = d_datekey
        and (c_city='UNITED KI1' or c_city='UNITED KI5') and (s_city='UNITED KI1' or s_city='UNITED KI5')
        and d_yearmonth = 'Dec1997' group by c_city, s_city, d_year""",
    "q4.1": """select d_year, c_nation, sum(lo_revenue - lo_supplycost) from date, customer, supplier, part, lineorder
        where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_partkey = p_partkey
        and lo_orderdate = d_datekey and c_region = 'AMERICA' and s_region = 'AMERICA'
        and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2') group by d_year, c_nation""",
    "q4.2": """select d_year, s_nation, p_category, sum(lo_revenue - lo_supplycost) from date, customer, supplier, part, lineorder
        where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_partkey = p_partkey
        and lo_orderdate = d_datekey and c_region = 'AMERICA' and s_region = 'AMERICA'
        and (d_year = 1997 or d_year = 1998) and (p_mfgr = 'MFGR#1' or p_mfgr = 'MFGR#2')
        group by d_year, s_nation, p_category""",
    "q4.3": """select d_year, s_city, p_brand1, sum(lo_revenue - lo_supplycost) from date, customer, supplier, part, lineorder
        where lo_custkey = c_custkey and lo_suppkey = s_suppkey and lo_partkey = p_partkey
        and lo_orderdate = d_datekey and c_region = 'AMERICA' and s_nation = 'UNITED STATES'
        and (d_year = 1997 or d_year = 1998) and p_category = 'MFGR#14'
        group by d_year, s_city, p_brand1""",
}


TABLES = ["lineorder", "date", "customer", "supplier", "part"]


def table_format(data_dir, fmt=None):
    """The export format to read from data_dir: fmt when given, else parquet when every table
    has a .parquet file there, else csv when every table has a .csv file; a missing file is an
    error (SystemExit) naming it."""
    for f in [fmt] if fmt else ["parquet", "csv"]:
        missing = [t for t in TABLES if not os.path.isfile(os.path.join(data_dir, f"{t}.{f}"))]
        if not missing:
            return f
        if fmt:
            sys.exit(f"{data_dir}: no {missing[0]}.{f}")
    sys.exit(f"{data_dir}: neither <table>.parquet nor <table>.csv for all of {', '.join(TABLES)}")


def load_tables(con, data_dir, fmt=None):
    """Loads the five tables into DuckDB's in-memory tables; returns the format read."""
    fmt = table_format(data_dir, fmt)
    for t in TABLES:
        path = os.path.join(data_dir, f"{t}.{fmt}").replace("'", "''")
        if fmt == "parquet":
            source = f"read_parquet('{path}')"
        else:
            source = f"read_csv('{path}', header=true, quote='\"')"
        con.execute(f"create table {t} as select * from {source}")
    return fmt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--format", choices=["parquet", "csv"])
    a = ap.parse_args()
    con = duckdb.connect()
    load_tables(con, a.dir, a.format)
    out = {}
    for name, sql in QUERIES.items():
        rows = con.execute(sql).fetchall()
        res = []
        for r in rows:
            if r[-1] is None:  # an aggregate over no rows: no group
                continue
            res.append([str(x) for x in r[:-1]] + [int(r[-1])])
        out[name] = res
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
