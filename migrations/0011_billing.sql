-- Billing per team (docs/billing.md). Money is integer cents in every column.

-- The team's customer at the payment processor (Stripe), made on first need.
CREATE TABLE billing_customers (
  team_id TEXT PRIMARY KEY NOT NULL,
  processor_customer_id TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL
);

CREATE TABLE payment_methods (
  id TEXT PRIMARY KEY NOT NULL,
  team_id TEXT NOT NULL,
  processor_payment_method_id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  card_brand TEXT,
  card_last4 TEXT,
  card_exp_month INTEGER,
  card_exp_year INTEGER,
  is_default INTEGER NOT NULL DEFAULT 0,
  added_by TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX payment_methods_team_idx ON payment_methods (team_id);
CREATE INDEX payment_methods_added_by_idx ON payment_methods (added_by);

-- One subscription row per team; subscribing again after a cancellation reuses it.
CREATE TABLE subscriptions (
  id TEXT PRIMARY KEY NOT NULL,
  team_id TEXT NOT NULL UNIQUE,
  plan_slug TEXT NOT NULL,
  status TEXT NOT NULL,
  past_due_since TEXT,
  cancelled_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX subscriptions_status_idx ON subscriptions (status, past_due_since);

-- A pod's charge for one UTC day. The primary key is the idempotency of the daily accrual: a re-run
-- or a retried page inserts nothing new. `invoice_id` is set when an invoice claims the charge.
CREATE TABLE pod_charges (
  team_id TEXT NOT NULL,
  pod_id TEXT NOT NULL,
  day TEXT NOT NULL,
  pod_name TEXT NOT NULL,
  plan_slug TEXT NOT NULL,
  amount INTEGER NOT NULL,
  invoice_id TEXT,
  PRIMARY KEY (team_id, pod_id, day)
) WITHOUT ROWID;
CREATE INDEX pod_charges_uninvoiced_idx ON pod_charges (invoice_id, team_id, day);

CREATE TABLE invoices (
  id TEXT PRIMARY KEY NOT NULL,
  team_id TEXT NOT NULL,
  processor_invoice_id TEXT UNIQUE,
  status TEXT NOT NULL,
  subtotal INTEGER NOT NULL DEFAULT 0,
  credits_applied INTEGER,
  amount_due INTEGER NOT NULL DEFAULT 0,
  amount_paid INTEGER NOT NULL DEFAULT 0,
  currency TEXT NOT NULL DEFAULT 'usd',
  period_start TEXT NOT NULL,
  period_end TEXT NOT NULL,
  hosted_invoice_url TEXT,
  paid_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
-- One invoice per team and period: the idempotency of invoicing.
CREATE UNIQUE INDEX invoices_team_period_idx ON invoices (team_id, period_end);
CREATE INDEX invoices_status_idx ON invoices (status);

CREATE TABLE invoice_lines (
  id TEXT PRIMARY KEY NOT NULL,
  invoice_id TEXT NOT NULL,
  pod_id TEXT NOT NULL,
  pod_name TEXT NOT NULL,
  plan_slug TEXT NOT NULL,
  days INTEGER NOT NULL,
  amount INTEGER NOT NULL
);
CREATE INDEX invoice_lines_invoice_idx ON invoice_lines (invoice_id);

CREATE TABLE credits (
  id TEXT PRIMARY KEY NOT NULL,
  team_id TEXT NOT NULL,
  amount INTEGER NOT NULL,
  remaining INTEGER NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  expires_at TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX credits_team_idx ON credits (team_id);

CREATE TABLE credit_applications (
  invoice_id TEXT NOT NULL,
  credit_id TEXT NOT NULL,
  amount INTEGER NOT NULL,
  PRIMARY KEY (invoice_id, credit_id)
) WITHOUT ROWID;

-- Processor webhook events applied: a replay of an id is answered and ignored.
CREATE TABLE billing_webhook_events (
  id TEXT PRIMARY KEY NOT NULL,
  type TEXT NOT NULL,
  received_at TEXT NOT NULL
);

-- Where a paged cron job got to on its day: the next trigger goes on from the cursor.
CREATE TABLE billing_job_cursors (
  job TEXT PRIMARY KEY NOT NULL,
  day TEXT NOT NULL,
  cursor TEXT NOT NULL,
  done INTEGER NOT NULL DEFAULT 0
);
