/// The frame of every signed-in console page (`console-layout`): the title, the navigation the key's scopes allow,
/// the operator's name, the form token, the sentence an action left, and the live statuses' stream.
struct ConsoleFrame: Sendable {
    var title: String
    var application = "Assent console"
    var `operator`: String
    var csrf: String
    var navActivations: Bool
    var navOperations: Bool
    var navAudit: Bool
    var navClients: Bool
    /// The application's page (keys, versions, push credentials) and the operators' page.
    var navApplication: Bool
    var navOperators: Bool
    /// The application the console works with.
    var currentApplication: String
    /// The switcher's choices; empty when there is only one to work with.
    struct ApplicationChoice: Sendable {
        var id: String
        var name: String
        var selected: Bool
    }
    var applications: [ApplicationChoice]
    /// Whether there is a choice (set with ``applications``: the page sees stored fields only).
    var hasChoices = false
    /// Where the switcher returns to.
    var back: String
    var message: String?
    var error: String?
    var live: String?
}

/// The sign-in form (on the hosted pages' layout).
struct ConsoleSignInPage: PageContext {
    static let template = PageTemplate.consoleSignIn
    var csrf: String
    /// Whether an API key may sign in too (break-glass).
    var apiKeySignIn: Bool
    /// The operator name a refused sign-in kept.
    var name = ""
}

/// An operator account's one-time set-up: the TOTP key and the password form.
struct ConsoleSetupPage: PageContext {
    static let template = PageTemplate.consoleSetup
    var csrf: String
    var token: String
    var name: String
    var role: String
    var qrCode: String
    /// The secret in groups of four, for typing.
    var secret: String
}

/// The signed-in operator's own page.
struct ConsoleMePage: PageContext {
    static let template = PageTemplate.consoleMe
    var name: String
    /// "operator account, role auditor" or "API key (break-glass)".
    var kind: String
    var scopes: [String]
    var applications: String
    var lastSignIn: String?
    /// Whether the password form is shown.
    var account: Bool
    /// The operator account's passkeys (`id` Base64URL).
    struct Passkey: Sendable {
        var id: String
        var name: String
        var added: String
        var used: String
    }
    var passkeys: [Passkey] = []
    var hasPasskeys = false
    /// The linked phone that approves sign-ins, as the operator knows it.
    var phone: String? = nil
    /// A link request waits on a phone.
    var linkPending = false
    var applicationChoices: [ConsoleFrame.ApplicationChoice] = []
    var linkUser = ""
}

/// What went wrong.
struct ConsoleErrorPage: PageContext {
    static let template = PageTemplate.consoleError
    var detail: String
}

/// The dashboard: activations by state, the last day's finished operations, the application's name.
struct ConsoleDashboardPage: PageContext {
    static let template = PageTemplate.consoleDashboard
    struct StateCount: Sendable {
        var state: String
        var count: Int
    }
    struct StatusCount: Sendable {
        var status: String
        var count: Int
    }
    var showActivations = false
    var activationCounts: [StateCount] = []
    var showChart = false
    var chart: String?
    var totals: [StatusCount] = []
    var showApplication = false
    var applicationName: String?
    var canRename = false
    var nothing = false
}

/// The audit log, filtered, a page at a time.
struct ConsoleAuditPage: PageContext {
    static let template = PageTemplate.consoleAudit
    struct Event: Sendable {
        var id: Int64
        var at: String
        var atIso: String
        var type: String
        /// The name of the application it is about; empty for the organisation's own actions.
        var application: String
        var user: String
        var activation: String
        /// The activation's id as the console shows it in lists: its first 8 characters.
        var activationShort: String
        var actor: String
        var detail: String
        var userUrl: String?
        var activationUrl: String?
    }
    /// Whether the page shows every event and the chain (an operator of every application), or the chosen
    /// application's events only.
    var wholeChain: Bool
    var applicationName: String
    var user: String
    var activation: String
    var type: String
    var from: String
    var until: String
    var events: [Event]
    var empty: Bool
    var next: String?
    var first: String?
    /// The hash chain's state: a sentence, whether it verified, and the key's fingerprint.
    var chain = ""
    var chainIntact = true
    var chainProblem: String?
    var keyFingerprint = ""
}

/// The users whose id starts with the search.
struct ConsoleUsersPage: PageContext {
    static let template = PageTemplate.consoleUsers
    struct User: Sendable {
        var user: String
        var url: String
        var activations: Int
        var active: Int
        var latest: String
        var latestIso: String
        /// "yes" when the user has a login account, "—" otherwise.
        var login: String
    }
    var q: String
    var empty: Bool
    var canCreate: Bool
    var users: [User]
}

/// One user: their activations and their newest operations.
struct ConsoleUserPage: PageContext {
    static let template = PageTemplate.consoleUser
    struct Activation: Sendable {
        var id: String
        var url: String
        var state: String
        var stateClass: String
        var name: String
        var fingerprint: String
        var push: String
        var failed: String
        var lastUsed: String
        var lastUsedIso: String?
    }
    var user: String
    /// While push sign-ins are suspended after the user reported one as fraud.
    var fraudNotice: String?
    var canCreate: Bool
    var activations: [Activation]
    var empty: Bool
    var showOperations = false
    var operations: [ConsoleOperationRow] = []
    var operationsUrl: String?
    /// The user's login account in this application, for an operator who may read them.
    var account: LoginAccount?

    struct LoginAccount: Sendable {
        var name: String?
        var state: String
        var stateClass: String
        var enabled: Bool
        /// Whether the operator may sign the person out and disable or enable the account.
        var canWrite: Bool
        var signOutUrl: String
        var disableUrl: String
        var enableUrl: String
        /// Its second factors and remembered browsers, each with where an operator removes or forgets it.
        var factors: [Item] = []
        var browsers: [Item] = []
        /// The wrong passwords counted against it now, when any ("3 wrong passwords until 14:05 UTC").
        var failures: String? = nil
        var unlockUrl = ""
    }

    /// A factor or a remembered browser of the login account.
    struct Item: Sendable {
        var id: String
        var label: String
        var detail: String
        var url: String
    }
}

/// One activation: its details, its code and QR code while it waits, and what may be done with it.
struct ConsoleActivationPage: PageContext {
    static let template = PageTemplate.consoleActivation
    var id: String
    var user: String
    var userUrl: String
    var state: String
    var stateClass: String
    var details: [LabeledValue]
    var canCommit: Bool
    var canBlock: Bool
    var canUnblock: Bool
    var canRemove: Bool
    var fingerprint: String?
    var expired: String?
    var push: String?
    var code: String?
    var codeExpires: String?
    var qrUrl: String?
    var svgUrl: String?
    var deliveries: [ConsolePushDelivery] = []
    var hasDeliveries = false
    var retention: String?
}

/// A row of the push delivery trace: when, through which service, about what, and what became of it.
struct ConsolePushDelivery: Sendable {
    /// The rows of `records`, each naming the operation (on an activation's page) or the activation.
    static func rows(
        _ records: [PushDeliveryRecord], about: KeyPath<PushDeliveryRecord, String>, path: (String) -> String
    )
        -> [ConsolePushDelivery]
    {
        records.map { record in
            let answer = record.httpStatus.map { "HTTP \($0)" } ?? "no answer"
            let done: String =
                switch record.outcome {
                case .delivered: "delivered"
                case .unregistered: "registration removed"
                case .retry: "will be tried again"
                case .failed: "given up"
                }
            return ConsolePushDelivery(
                when: ConsolePages.time(record.at), iso: ConsolePages.iso(record.at), service: record.service,
                event: record.event, aboutId: record[keyPath: about], aboutUrl: path(record[keyPath: about]),
                outcome: record.outcome.rawValue,
                outcomeClass: record.outcome == .delivered
                    ? "approved" : record.outcome == .retry ? "pending" : "failed",
                summary: "\(answer) — \(done)", reason: record.reason, latency: record.latencyMillis)
        }
    }

    /// "for 30 days": how long attempts stay in the trace.
    static func retention(_ kept: Duration) -> String {
        let days = kept.components.seconds / 86_400
        return "for \(days) day\(days == 1 ? "" : "s")"
    }

    var when: String
    var iso: String
    var service: String
    var event: String
    /// The operation (on an activation's page) or the activation (on an operation's page).
    var aboutId: String
    var aboutUrl: String
    var outcome: String
    var outcomeClass: String
    /// "HTTP 410 — registration removed".
    var summary: String
    var reason: String?
    var latency: Int64
}

/// A row of an operations table.
struct ConsoleOperationRow: Sendable {
    var id: String
    var url: String
    var user: String
    var userUrl: String?
    var name: String
    var title: String
    var status: String
    var statusClass: String
    var created: String
    var createdIso: String
}

/// The newest operations, by user and status.
struct ConsoleOperationsPage: PageContext {
    static let template = PageTemplate.consoleOperations
    struct Status: Sendable {
        var value: String
        var selected: Bool
    }
    var user: String
    var empty: Bool
    var statuses: [Status]
    var operations: [ConsoleOperationRow]
    var canCreate: Bool
    var newUrl: String
    var next: String?
    var first: String?
}

/// One operation as the phone shows it, with cancel, the proximity code, and the offline QR code.
struct ConsoleOperationPage: PageContext {
    static let template = PageTemplate.consoleOperation
    struct Device: Sendable {
        var id: String
        var label: String
        var selected: Bool
    }
    var id: String
    var status: String
    var statusClass: String
    var formTitle: String
    var formMessage: String
    var formLanguage: String
    var attributes: [LabeledValue]
    var details: [LabeledValue]
    var canCancel: Bool
    var proximity: Bool
    var proximityUrl: String
    var userUrl: String?
    var offline = false
    var devices: [Device] = []
    var offlineQR: String?
    var offlineQRText: String?
    var deliveries: [ConsolePushDelivery] = []
    var hasDeliveries = false
    var retention: String?
}

/// The form that creates an operation from a template.
struct ConsoleNewOperationPage: PageContext {
    static let template = PageTemplate.consoleNewOperation
    struct Template: Sendable {
        var name: String
        var selected: Bool
        var parameters: String
    }
    var user: String
    var params: String
    var proximity: Bool
    var templates: [Template]
    var noTemplates: Bool
}
