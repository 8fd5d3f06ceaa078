CREATE TABLE `alert_channels` (
	`id` text PRIMARY KEY NOT NULL,
	`team_id` text NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`url` text,
	`roles` text,
	`secret_sealed` text,
	`enabled` integer DEFAULT true NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `alert_channels_team_idx` ON `alert_channels` (`team_id`);--> statement-breakpoint
CREATE TABLE `alert_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`team_id` text NOT NULL,
	`channel_id` text NOT NULL,
	`incident_id` text,
	`event` text NOT NULL,
	`state` text NOT NULL,
	`payload` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`status_code` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`created_at` text NOT NULL,
	`delivered_at` text
);
--> statement-breakpoint
CREATE INDEX `alert_deliveries_team_created_idx` ON `alert_deliveries` (`team_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `alert_deliveries_channel_idx` ON `alert_deliveries` (`channel_id`);--> statement-breakpoint
CREATE TABLE `alert_incidents` (
	`id` text PRIMARY KEY NOT NULL,
	`team_id` text NOT NULL,
	`pod_id` text,
	`event` text NOT NULL,
	`key` text NOT NULL,
	`summary` text NOT NULL,
	`opened_at` text NOT NULL,
	`resolved_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `alert_incidents_open_key_idx` ON `alert_incidents` (`key`) WHERE resolved_at IS NULL;--> statement-breakpoint
CREATE INDEX `alert_incidents_team_idx` ON `alert_incidents` (`team_id`,`opened_at`);