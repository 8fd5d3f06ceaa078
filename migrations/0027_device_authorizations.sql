CREATE TABLE `device_authorizations` (
	`id` text PRIMARY KEY NOT NULL,
	`device_code_hash` text NOT NULL,
	`user_code` text NOT NULL,
	`client_id` text NOT NULL,
	`code_verifier` text NOT NULL,
	`status` text NOT NULL,
	`auth_code` text,
	`redirect_uri` text,
	`connector_id` text,
	`user_id` text,
	`team_id` text,
	`interval_s` integer NOT NULL,
	`last_polled_at` text,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `device_authorizations_device_code_idx` ON `device_authorizations` (`device_code_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `device_authorizations_user_code_idx` ON `device_authorizations` (`user_code`);--> statement-breakpoint
CREATE INDEX `device_authorizations_expires_idx` ON `device_authorizations` (`expires_at`);