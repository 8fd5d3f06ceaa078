CREATE TABLE `pod_coding_agents` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`slug` text NOT NULL,
	`status` text NOT NULL,
	`requested_version` text NOT NULL,
	`version` text,
	`node_major` integer,
	`node_pinned` integer,
	`error_msg` text,
	`installed_at` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pod_coding_agents_pod_slug_idx` ON `pod_coding_agents` (`pod_id`,`slug`);
