"""A subset of the TPC-DS tables (specification 3.2, section 2), their primary keys and foreign keys.

Types as the specification declares them: surrogate keys (``*_sk``) and ticket/order numbers are integer
identifiers, business keys (``*_id``) char(16), dates date, money decimal(7,2) (decimal(5,2) for GMT offsets and tax
percentages, decimal(15,2) for a promotion's cost), fixed-width text char(n) and variable text varchar(n). The column
names are the generator's, including the specification's own ``s_tax_precentage``. No index but the primary keys.

>>> set(DEFAULT_TABLES) <= set(TABLES) and all(t in DDL for t in TABLES)
True
>>> [fk for fk in FOREIGN_KEYS if fk[0] == "store_returns"][:2]
[('store_returns', 'sr_returned_date_sk', 'date_dim'), ('store_returns', 'sr_return_time_sk', 'time_dim')]
"""

from __future__ import annotations

SOURCE_DIALECT = "postgres"  # the dialect DDL is written in (transpiled where it runs)
_MONEY = "numeric(7,2)"


def _money(*names: str) -> str:
    return ", ".join(f"{n} {_MONEY}" for n in names)


DDL: dict[str, str] = {
    "date_dim": "d_date_sk integer NOT NULL, d_date_id char(16) NOT NULL, d_date date, d_month_seq integer, "
    "d_week_seq integer, d_quarter_seq integer, d_year integer, d_dow integer, d_moy integer, d_dom integer, "
    "d_qoy integer, d_fy_year integer, d_fy_quarter_seq integer, d_fy_week_seq integer, d_day_name char(9), "
    "d_quarter_name char(6), d_holiday char(1), d_weekend char(1), d_following_holiday char(1), d_first_dom integer, "
    "d_last_dom integer, d_same_day_ly integer, d_same_day_lq integer, d_current_day char(1), "
    "d_current_week char(1), d_current_month char(1), d_current_quarter char(1), d_current_year char(1)",
    "time_dim": "t_time_sk integer NOT NULL, t_time_id char(16) NOT NULL, t_time integer, t_hour integer, "
    "t_minute integer, t_second integer, t_am_pm char(2), t_shift char(20), t_sub_shift char(20), "
    "t_meal_time char(20)",
    "income_band": "ib_income_band_sk integer NOT NULL, ib_lower_bound integer, ib_upper_bound integer",
    "household_demographics": "hd_demo_sk integer NOT NULL, hd_income_band_sk integer, hd_buy_potential char(15), "
    "hd_dep_count integer, hd_vehicle_count integer",
    "customer_demographics": "cd_demo_sk integer NOT NULL, cd_gender char(1), cd_marital_status char(1), "
    "cd_education_status char(20), cd_purchase_estimate integer, cd_credit_rating char(10), cd_dep_count integer, "
    "cd_dep_employed_count integer, cd_dep_college_count integer",
    "customer_address": "ca_address_sk integer NOT NULL, ca_address_id char(16) NOT NULL, ca_street_number char(10), "
    "ca_street_name varchar(60), ca_street_type char(15), ca_suite_number char(10), ca_city varchar(60), "
    "ca_county varchar(30), ca_state char(2), ca_zip char(10), ca_country varchar(20), ca_gmt_offset numeric(5,2), "
    "ca_location_type char(20)",
    "customer": "c_customer_sk integer NOT NULL, c_customer_id char(16) NOT NULL, c_current_cdemo_sk integer, "
    "c_current_hdemo_sk integer, c_current_addr_sk integer, c_first_shipto_date_sk integer, "
    "c_first_sales_date_sk integer, c_salutation char(10), c_first_name char(20), c_last_name char(30), "
    "c_preferred_cust_flag char(1), c_birth_day integer, c_birth_month integer, c_birth_year integer, "
    "c_birth_country varchar(20), c_login char(13), c_email_address char(50), c_last_review_date_sk integer",
    "item": "i_item_sk integer NOT NULL, i_item_id char(16) NOT NULL, i_rec_start_date date, i_rec_end_date date, "
    "i_item_desc varchar(200), i_current_price numeric(7,2), i_wholesale_cost numeric(7,2), i_brand_id integer, "
    "i_brand char(50), i_class_id integer, i_class char(50), i_category_id integer, i_category char(50), "
    "i_manufact_id integer, i_manufact char(50), i_size char(20), i_formulation char(20), i_color char(20), "
    "i_units char(10), i_container char(10), i_manager_id integer, i_product_name char(50)",
    "store": "s_store_sk integer NOT NULL, s_store_id char(16) NOT NULL, s_rec_start_date date, s_rec_end_date date, "
    "s_closed_date_sk integer, s_store_name varchar(50), s_number_employees integer, s_floor_space integer, "
    "s_hours char(20), s_manager varchar(40), s_market_id integer, s_geography_class varchar(100), "
    "s_market_desc varchar(100), s_market_manager varchar(40), s_division_id integer, s_division_name varchar(50), "
    "s_company_id integer, s_company_name varchar(50), s_street_number varchar(10), s_street_name varchar(60), "
    "s_street_type char(15), s_suite_number char(10), s_city varchar(60), s_county varchar(30), s_state char(2), "
    "s_zip char(10), s_country varchar(20), s_gmt_offset numeric(5,2), s_tax_precentage numeric(5,2)",
    "warehouse": "w_warehouse_sk integer NOT NULL, w_warehouse_id char(16) NOT NULL, w_warehouse_name varchar(20), "
    "w_warehouse_sq_ft integer, w_street_number char(10), w_street_name varchar(60), w_street_type char(15), "
    "w_suite_number char(10), w_city varchar(60), w_county varchar(30), w_state char(2), w_zip char(10), "
    "w_country varchar(20), w_gmt_offset numeric(5,2)",
    "ship_mode": "sm_ship_mode_sk integer NOT NULL, sm_ship_mode_id char(16) NOT NULL, sm_type char(30), "
    "sm_code char(10), sm_carrier char(20), sm_contract char(20)",
    "reason": "r_reason_sk integer NOT NULL, r_reason_id char(16) NOT NULL, r_reason_desc char(100)",
    "promotion": "p_promo_sk integer NOT NULL, p_promo_id char(16) NOT NULL, p_start_date_sk integer, "
    "p_end_date_sk integer, p_item_sk integer, p_cost numeric(15,2), p_response_target integer, "
    "p_promo_name char(50), p_channel_dmail char(1), p_channel_email char(1), p_channel_catalog char(1), "
    "p_channel_tv char(1), p_channel_radio char(1), p_channel_press char(1), p_channel_event char(1), "
    "p_channel_demo char(1), p_channel_details varchar(100), p_purpose char(15), p_discount_active char(1)",
    "store_sales": "ss_sold_date_sk integer, ss_sold_time_sk integer, ss_item_sk integer NOT NULL, "
    "ss_customer_sk integer, ss_cdemo_sk integer, ss_hdemo_sk integer, ss_addr_sk integer, ss_store_sk integer, "
    "ss_promo_sk integer, ss_ticket_number integer NOT NULL, ss_quantity integer, "
    + _money("ss_wholesale_cost", "ss_list_price", "ss_sales_price", "ss_ext_discount_amt", "ss_ext_sales_price",
             "ss_ext_wholesale_cost", "ss_ext_list_price", "ss_ext_tax", "ss_coupon_amt", "ss_net_paid",
             "ss_net_paid_inc_tax", "ss_net_profit"),
    "store_returns": "sr_returned_date_sk integer, sr_return_time_sk integer, sr_item_sk integer NOT NULL, "
    "sr_customer_sk integer, sr_cdemo_sk integer, sr_hdemo_sk integer, sr_addr_sk integer, sr_store_sk integer, "
    "sr_reason_sk integer, sr_ticket_number integer NOT NULL, sr_return_quantity integer, "
    + _money("sr_return_amt", "sr_return_tax", "sr_return_amt_inc_tax", "sr_fee", "sr_return_ship_cost",
             "sr_refunded_cash", "sr_reversed_charge", "sr_store_credit", "sr_net_loss"),
    "catalog_sales": "cs_sold_date_sk integer, cs_sold_time_sk integer, cs_ship_date_sk integer, "
    "cs_bill_customer_sk integer, cs_bill_cdemo_sk integer, cs_bill_hdemo_sk integer, cs_bill_addr_sk integer, "
    "cs_ship_customer_sk integer, cs_ship_cdemo_sk integer, cs_ship_hdemo_sk integer, cs_ship_addr_sk integer, "
    "cs_call_center_sk integer, cs_catalog_page_sk integer, cs_ship_mode_sk integer, cs_warehouse_sk integer, "
    "cs_item_sk integer NOT NULL, cs_promo_sk integer, cs_order_number integer NOT NULL, cs_quantity integer, "
    + _money("cs_wholesale_cost", "cs_list_price", "cs_sales_price", "cs_ext_discount_amt", "cs_ext_sales_price",
             "cs_ext_wholesale_cost", "cs_ext_list_price", "cs_ext_tax", "cs_coupon_amt", "cs_ext_ship_cost",
             "cs_net_paid", "cs_net_paid_inc_tax", "cs_net_paid_inc_ship", "cs_net_paid_inc_ship_tax",
             "cs_net_profit"),
    "web_sales": "ws_sold_date_sk integer, ws_sold_time_sk integer, ws_ship_date_sk integer, ws_item_sk integer "
    "NOT NULL, ws_bill_customer_sk integer, ws_bill_cdemo_sk integer, ws_bill_hdemo_sk integer, "
    "ws_bill_addr_sk integer, ws_ship_customer_sk integer, ws_ship_cdemo_sk integer, ws_ship_hdemo_sk integer, "
    "ws_ship_addr_sk integer, ws_web_page_sk integer, ws_web_site_sk integer, ws_ship_mode_sk integer, "
    "ws_warehouse_sk integer, ws_promo_sk integer, ws_order_number integer NOT NULL, ws_quantity integer, "
    + _money("ws_wholesale_cost", "ws_list_price", "ws_sales_price", "ws_ext_discount_amt", "ws_ext_sales_price",
             "ws_ext_wholesale_cost", "ws_ext_list_price", "ws_ext_tax", "ws_coupon_amt", "ws_ext_ship_cost",
             "ws_net_paid", "ws_net_paid_inc_tax", "ws_net_paid_inc_ship", "ws_net_paid_inc_ship_tax",
             "ws_net_profit"),
    "inventory": "inv_date_sk integer NOT NULL, inv_item_sk integer NOT NULL, inv_warehouse_sk integer NOT NULL, "
    "inv_quantity_on_hand integer",
}

TABLES = tuple(DDL)  # dimensions first, facts last (the order they are loaded and keyed in)

PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "date_dim": ("d_date_sk",), "time_dim": ("t_time_sk",), "income_band": ("ib_income_band_sk",),
    "household_demographics": ("hd_demo_sk",), "customer_demographics": ("cd_demo_sk",),
    "customer_address": ("ca_address_sk",), "customer": ("c_customer_sk",), "item": ("i_item_sk",),
    "store": ("s_store_sk",), "warehouse": ("w_warehouse_sk",), "ship_mode": ("sm_ship_mode_sk",),
    "reason": ("r_reason_sk",), "promotion": ("p_promo_sk",),
    "store_sales": ("ss_item_sk", "ss_ticket_number"), "store_returns": ("sr_item_sk", "sr_ticket_number"),
    "catalog_sales": ("cs_item_sk", "cs_order_number"), "web_sales": ("ws_item_sk", "ws_order_number"),
    "inventory": ("inv_date_sk", "inv_item_sk", "inv_warehouse_sk"),
}

_SALES_DIMS = (("sold_date_sk", "date_dim"), ("sold_time_sk", "time_dim"), ("ship_date_sk", "date_dim"),
               ("item_sk", "item"), ("bill_customer_sk", "customer"), ("bill_cdemo_sk", "customer_demographics"),
               ("bill_hdemo_sk", "household_demographics"), ("bill_addr_sk", "customer_address"),
               ("ship_customer_sk", "customer"), ("ship_cdemo_sk", "customer_demographics"),
               ("ship_hdemo_sk", "household_demographics"), ("ship_addr_sk", "customer_address"),
               ("ship_mode_sk", "ship_mode"), ("warehouse_sk", "warehouse"), ("promo_sk", "promotion"))

# (table, column, referenced table): each references the referenced table's one-column primary key
FOREIGN_KEYS: tuple[tuple[str, str, str], ...] = (
    ("household_demographics", "hd_income_band_sk", "income_band"),
    ("customer", "c_current_cdemo_sk", "customer_demographics"),
    ("customer", "c_current_hdemo_sk", "household_demographics"),
    ("customer", "c_current_addr_sk", "customer_address"),
    ("customer", "c_first_shipto_date_sk", "date_dim"), ("customer", "c_first_sales_date_sk", "date_dim"),
    ("customer", "c_last_review_date_sk", "date_dim"),
    ("store", "s_closed_date_sk", "date_dim"),
    ("promotion", "p_start_date_sk", "date_dim"), ("promotion", "p_end_date_sk", "date_dim"),
    ("promotion", "p_item_sk", "item"),
    *(("store_sales", f"ss_{c}", t) for c, t in (
        ("sold_date_sk", "date_dim"), ("sold_time_sk", "time_dim"), ("item_sk", "item"),
        ("customer_sk", "customer"), ("cdemo_sk", "customer_demographics"), ("hdemo_sk", "household_demographics"),
        ("addr_sk", "customer_address"), ("store_sk", "store"), ("promo_sk", "promotion"))),
    *(("store_returns", f"sr_{c}", t) for c, t in (
        ("returned_date_sk", "date_dim"), ("return_time_sk", "time_dim"), ("item_sk", "item"),
        ("customer_sk", "customer"), ("cdemo_sk", "customer_demographics"), ("hdemo_sk", "household_demographics"),
        ("addr_sk", "customer_address"), ("store_sk", "store"), ("reason_sk", "reason"))),
    *(("catalog_sales", f"cs_{c}", t) for c, t in _SALES_DIMS),
    *(("web_sales", f"ws_{c}", t) for c, t in _SALES_DIMS),
    ("inventory", "inv_date_sk", "date_dim"), ("inventory", "inv_item_sk", "item"),
    ("inventory", "inv_warehouse_sk", "warehouse"),
)

# The store channel with its dimensions, the other two sales channels and the dimensions they share: every table
# but inventory (the largest fact: 1.7 times store_sales at scale 0.3) and the fixed-size customer_demographics
# (1.92 million rows at every scale) is small; both are in ``TABLES`` for a caller that wants them.
DEFAULT_TABLES: tuple[str, ...] = tuple(t for t in TABLES if t not in ("inventory", "customer_demographics"))
