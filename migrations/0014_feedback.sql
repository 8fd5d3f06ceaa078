CREATE TABLE `feedback_settings` (
	`pod_id` text PRIMARY KEY NOT NULL,
	`enabled` integer NOT NULL,
	`visibility` text NOT NULL,
	`token` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `feedback_settings_token_idx` ON `feedback_settings` (`token`);
--> statement-breakpoint
CREATE TABLE `feedback` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`submitter_id` text NOT NULL,
	`name` text NOT NULL,
	`email` text NOT NULL,
	`comment` text NOT NULL,
	`page_path` text NOT NULL,
	`pin_selector` text NOT NULL,
	`pin_x` real,
	`pin_y` real,
	`viewport_w` integer,
	`viewport_h` integer,
	`element_text` text NOT NULL,
	`status` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `feedback_pod_status_idx` ON `feedback` (`pod_id`,`status`,`created_at`);
--> statement-breakpoint
CREATE INDEX `feedback_pod_submitter_idx` ON `feedback` (`pod_id`,`submitter_id`,`created_at`);
