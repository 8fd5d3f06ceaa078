CREATE TABLE `audit_events` (
	`id` text PRIMARY KEY NOT NULL,
	`team_id` text NOT NULL,
	`at` text NOT NULL,
	`actor_id` text NOT NULL,
	`actor_email` text NOT NULL,
	`credential` text NOT NULL,
	`credential_label` text,
	`ip` text,
	`action` text NOT NULL,
	`pod` text,
	`target` text,
	`outcome` text NOT NULL,
	`status` integer NOT NULL,
	`detail` text
);
--> statement-breakpoint
CREATE INDEX `audit_events_team_at_idx` ON `audit_events` (`team_id`,`at`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_team_actor_idx` ON `audit_events` (`team_id`,`actor_id`,`at`);--> statement-breakpoint
CREATE INDEX `audit_events_team_pod_idx` ON `audit_events` (`team_id`,`pod`,`at`);--> statement-breakpoint
CREATE INDEX `audit_events_team_action_idx` ON `audit_events` (`team_id`,`action`,`at`);--> statement-breakpoint
CREATE INDEX `audit_events_at_idx` ON `audit_events` (`at`);