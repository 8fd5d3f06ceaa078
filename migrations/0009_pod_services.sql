CREATE TABLE `pod_services` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`service_type` text NOT NULL,
	`status` text NOT NULL,
	`version` text,
	`port` integer NOT NULL,
	`password_encrypted` text NOT NULL,
	`error_msg` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pod_services_pod_type_idx` ON `pod_services` (`pod_id`,`service_type`);