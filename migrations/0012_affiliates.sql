-- The affiliate program (docs/affiliates.md). Money is integer cents; rates are integer percents.
-- Written by drizzle-kit from worker/db/schema/affiliates.ts.
CREATE TABLE `affiliate_earnings` (
	`id` text PRIMARY KEY NOT NULL,
	`affiliate_id` text NOT NULL,
	`referral_id` text,
	`invoice_id` text,
	`kind` text NOT NULL,
	`payment_amount` integer NOT NULL,
	`commission_rate` integer NOT NULL,
	`commission_amount` integer NOT NULL,
	`tier_slug` text NOT NULL,
	`dedupe_key` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_earnings_dedupe_key_unique` ON `affiliate_earnings` (`dedupe_key`);--> statement-breakpoint
CREATE INDEX `affiliate_earnings_affiliate_idx` ON `affiliate_earnings` (`affiliate_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `affiliate_payouts` (
	`id` text PRIMARY KEY NOT NULL,
	`affiliate_id` text NOT NULL,
	`amount` integer NOT NULL,
	`method` text NOT NULL,
	`status` text NOT NULL,
	`reference` text,
	`note` text,
	`paid_at` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `affiliate_payouts_affiliate_idx` ON `affiliate_payouts` (`affiliate_id`,`paid_at`);--> statement-breakpoint
CREATE TABLE `affiliate_visits` (
	`id` text PRIMARY KEY NOT NULL,
	`affiliate_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `affiliate_visits_affiliate_idx` ON `affiliate_visits` (`affiliate_id`);--> statement-breakpoint
CREATE TABLE `affiliates` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`referral_code` text NOT NULL,
	`custom_slug` text,
	`tier_slug` text NOT NULL,
	`status` text NOT NULL,
	`paypal_email` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliates_user_id_unique` ON `affiliates` (`user_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `affiliates_referral_code_unique` ON `affiliates` (`referral_code`);--> statement-breakpoint
CREATE UNIQUE INDEX `affiliates_custom_slug_unique` ON `affiliates` (`custom_slug`);--> statement-breakpoint
CREATE TABLE `referrals` (
	`id` text PRIMARY KEY NOT NULL,
	`affiliate_id` text NOT NULL,
	`referred_user_id` text NOT NULL,
	`referred_team_id` text NOT NULL,
	`status` text NOT NULL,
	`signed_up_at` text NOT NULL,
	`activated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `referrals_referred_user_id_unique` ON `referrals` (`referred_user_id`);--> statement-breakpoint
CREATE INDEX `referrals_affiliate_idx` ON `referrals` (`affiliate_id`,`signed_up_at`);--> statement-breakpoint
CREATE INDEX `referrals_team_idx` ON `referrals` (`referred_team_id`);