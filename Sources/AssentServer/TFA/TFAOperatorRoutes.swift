import AssentCrypto
import AssentModel
import Foundation
import Hummingbird

extension OperatorRoutes {
    /// `/api/v1/tfa/…`: login accounts, the relying party's second-factor start, the policy and remembered
    /// devices of the default application.
    func registerTFA(on api: RouterGroup<AssentRequestContext>) {
        let flows = TFAService(environment: environment)
        api.post("tfa/accounts") { request, context in
            try require(.tfaWrite, context)
            let body = try await HTTPSupport.decode(CreateTFAAccountRequest.self, from: request)
            let application = try await defaultApplication()
            // Lengths in Unicode scalars, as the OpenAPI document's JSON Schema counts them.
            guard UserID.isValid(body.userId) else { throw AssentServerError.invalidRequest(UserID.requirement) }
            if let password = body.password,
                !(8...PasswordHasher.maxLength).contains(password.unicodeScalars.count)
            {
                throw AssentServerError.invalidRequest("A password is 8 to \(PasswordHasher.maxLength) characters.")
            }
            let emails = body.emails ?? []
            guard emails.count <= 10, emails.allSatisfy(SMTPClient.isAddress) else {
                throw AssentServerError.invalidRequest("emails are at most 10 plain addresses (name@example.com).")
            }
            let now = environment.nowMillis
            var hash: String?
            if let password = body.password { hash = try await environment.tfa.passwordHasher.hash(password) }
            let account = TFAAccountRecord(
                applicationId: application.id, userId: body.userId, passwordHash: hash, createdAt: now)
            guard try await environment.store.insertTFAAccount(account) else {
                throw AssentServerError(
                    code: "ACCOUNT_EXISTS", status: 409, message: "An account with user id \(body.userId) exists.")
            }
            // A millisecond apart, so that listings (ordered by creation) keep the order given.
            for (index, email) in emails.enumerated() {
                try await addEmail(email, to: account, at: environment.nowMillis + Millis(index))
            }
            await environment.audit(
                "tfa.account_created", userId: body.userId, actor: actor(context), "Login account created.")
            return try json(try await accountInfo(account), status: .created)
        }
        api.get("tfa/accounts/:userId") { _, context in
            try require(.tfaRead, context)
            return try json(try await accountInfo(try await account(context)))
        }
        api.delete("tfa/accounts/:userId") { _, context in
            try require(.tfaWrite, context)
            let account = try await account(context)
            _ = try await environment.store.deleteTFAAccount(
                applicationId: account.applicationId, userId: account.userId)
            await environment.audit(
                "tfa.account_removed", userId: account.userId, actor: actor(context),
                "Login account removed with its factors and remembered devices.")
            return Response(status: .noContent)
        }
        api.post("tfa/accounts/:userId/emails") { request, context in
            try require(.tfaWrite, context)
            let body = try await HTTPSupport.decode(AddTFAEmailRequest.self, from: request)
            guard SMTPClient.isAddress(body.email) else {
                throw AssentServerError.invalidRequest("email is a plain address (name@example.com).")
            }
            let account = try await account(context)
            let factor = try await addEmail(body.email, to: account)
            await environment.audit(
                "tfa.email_added", userId: account.userId, actor: actor(context), "E-mail factor \(factor.id) added.")
            return try json(Self.info(factor), status: .created)
        }
        api.delete("tfa/accounts/:userId/factors/:id") { _, context in
            try require(.tfaWrite, context)
            let account = try await account(context)
            let id = try context.parameters.require("id")
            guard
                try await environment.store.deleteTFAFactor(
                    id: id, applicationId: account.applicationId, userId: account.userId)
            else { throw AssentServerError.notFound("The account has no factor with id \(id).") }
            await environment.audit(
                "tfa.factor_removed", userId: account.userId, actor: actor(context), "Factor \(id) removed.")
            return Response(status: .noContent)
        }
        api.get("tfa/accounts/:userId/devices") { _, context in
            try require(.tfaRead, context)
            let application = try await defaultApplication()
            let userId = try context.parameters.require("userId")
            let devices = try await environment.store.rememberedDevices(applicationId: application.id, userId: userId)
            return try json(RememberedDeviceList(devices: devices.map(Self.info)))
        }
        api.delete("tfa/devices/:id") { _, context in
            try require(.tfaWrite, context)
            let id = try context.parameters.require("id")
            let application = try await defaultApplication()
            guard let device = try await environment.store.rememberedDevice(id: id),
                device.applicationId == application.id
            else { throw AssentServerError.notFound("No remembered device has id \(id).") }
            if try await environment.store.revokeRememberedDevice(id: id, at: environment.nowMillis) {
                await environment.audit(
                    "tfa.device_revoked", userId: device.userId, actor: actor(context), "Device \(id) revoked.")
            }
            return Response(status: .noContent)
        }
        api.get("tfa/policy") { _, context in
            try require(.tfaRead, context)
            return try json(try await flows.policy(try await defaultApplication().id))
        }
        api.put("tfa/policy") { request, context in
            try require(.tfaWrite, context)
            let policy = try await HTTPSupport.decode(TFAPolicy.self, from: request)
            let missing = policy.providers.filter { !environment.tfa.offeredProviders.contains($0) }
            // A well-formed policy that this server's configuration cannot serve (no mail relay, no SMS gateway):
            // a conflict with the server's state, not a bad request.
            guard missing.isEmpty else {
                throw AssentServerError(
                    code: "ERR_PROVIDER_NOT_OFFERED", status: 409,
                    message: "This server does not offer \(missing.map(\.rawValue).joined(separator: ", ")) yet; it "
                        + "offers " + environment.tfa.offeredProviders.map(\.rawValue).joined(separator: ", ") + ".")
            }
            guard !policy.required || !policy.providers.isEmpty else {
                throw AssentServerError.invalidRequest("A policy that requires a second factor allows at least one.")
            }
            let application = try await defaultApplication()
            try await environment.store.putTFAPolicy(applicationId: application.id, policy)
            await environment.audit(
                "tfa.policy_set", actor: actor(context),
                "Second factor \(policy.required ? "required" : "optional"), providers "
                    + policy.providers.map(\.rawValue).joined(separator: ", ") + ".")
            return try json(policy)
        }
        api.post("tfa/logins") { request, context in
            try require(.tfaWrite, context)
            let body = try await HTTPSupport.decode(StartTFALoginRequest.self, from: request)
            let outcome = try await flows.secondFactor(
                application: try await defaultApplication(), userId: body.userId, firstFactor: nil,
                deviceToken: body.deviceToken)
            switch outcome {
            case .success(let success): return try json(StartTFALoginResponse(success: success))
            case .interruption(let interruption): return try json(StartTFALoginResponse(interruption: interruption))
            }
        }
    }

    private func account(_ context: AssentRequestContext) async throws -> TFAAccountRecord {
        let userId = try context.parameters.require("userId")
        let application = try await defaultApplication()
        guard let account = try await environment.store.tfaAccount(applicationId: application.id, userId: userId)
        else { throw AssentServerError.notFound("No login account has user id \(userId).") }
        return account
    }

    @discardableResult
    private func addEmail(_ email: String, to account: TFAAccountRecord, at createdAt: Millis? = nil) async throws
        -> TFAFactorRecord
    {
        let factor = TFAFactorRecord(
            id: TFATokens.id(), applicationId: account.applicationId, userId: account.userId, provider: .email,
            state: .active, destination: email, createdAt: createdAt ?? environment.nowMillis)
        try await environment.store.insertTFAFactor(factor)
        return factor
    }

    private func accountInfo(_ account: TFAAccountRecord) async throws -> TFAAccountInfo {
        let factors = try await environment.store.tfaFactors(
            applicationId: account.applicationId, userId: account.userId)
        return TFAAccountInfo(
            userId: account.userId, hasPassword: account.passwordHash != nil,
            factors: factors.filter { $0.state == .active }.map(Self.info),
            createdAt: Date(millis: account.createdAt))
    }

    static func info(_ factor: TFAFactorRecord) -> TFAFactorInfo {
        let obfuscated: String? =
            switch factor.provider {
            case .email: factor.destination.map(CodeFactor.obfuscateEmail)
            case .phone: factor.destination.map(CodeFactor.obfuscatePhone)
            default: nil
            }
        return TFAFactorInfo(
            id: factor.id, provider: factor.provider, obfuscated: obfuscated, createdAt: Date(millis: factor.createdAt),
            lastVerification: factor.lastVerifiedAt.map(Date.init(millis:)))
    }

    static func info(_ device: RememberedDeviceRecord) -> RememberedDeviceInfo {
        RememberedDeviceInfo(
            id: device.id, userId: device.userId, createdAt: Date(millis: device.createdAt),
            expiresAt: Date(millis: device.expiresAt), lastUsedAt: device.lastUsedAt.map(Date.init(millis:)),
            revokedAt: device.revokedAt.map(Date.init(millis:)))
    }
}
